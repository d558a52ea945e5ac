package recalld

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	recalldv1 "github.com/recalld/recalld/clients/go/gen/recalld/v1"
)

// shortNames are the exported enum constants of types.go with their Go names;
// the naming rule is prefix + the value name after the enum's own prefix.
var shortNames = map[string]protoreflect.Enum{
	"TypeFact": TypeFact, "TypePreference": TypePreference, "TypeEvent": TypeEvent, "TypeState": TypeState,
	"TypeDecision": TypeDecision, "TypeTask": TypeTask, "TypeSkill": TypeSkill, "TypeSummary": TypeSummary,
	"TierP0": TierP0, "TierP1": TierP1, "TierP2": TierP2,
	"StatusActive": StatusActive, "StatusSuperseded": StatusSuperseded, "StatusArchived": StatusArchived,
	"StatusDraft": StatusDraft, "StatusConflict": StatusConflict,
	"OutcomeCreated": OutcomeCreated, "OutcomeDuplicate": OutcomeDuplicate, "OutcomeSuperseded": OutcomeSuperseded,
	"OutcomeConflict": OutcomeConflict, "OutcomeDraft": OutcomeDraft,
	"ForgetSoft": ForgetSoft, "ForgetHard": ForgetHard,
	"ResolutionKeepExisting": ResolutionKeepExisting, "ResolutionAcceptNew": ResolutionAcceptNew, "ResolutionKeepBoth": ResolutionKeepBoth,
	"OperationWrite": OperationWrite, "OperationUpdate": OperationUpdate, "OperationForget": OperationForget,
	"OperationSupersede": OperationSupersede, "OperationConsolidate": OperationConsolidate, "OperationResolve": OperationResolve,
	"OperationRestore": OperationRestore, "OperationConfirm": OperationConfirm, "OperationRefresh": OperationRefresh,
	"OperationPurge":     OperationPurge,
	"DropBelowThreshold": DropBelowThreshold, "DropExpired": DropExpired, "DropSuperseded": DropSuperseded,
	"DropOtherScope": DropOtherScope, "DropOverBudget": DropOverBudget, "DropDuplicate": DropDuplicate,
	"DropBeyondTopK": DropBeyondTopK, "DropInactive": DropInactive,
	"DropFiltered": DropFiltered, "DropJudgedIrrelevant": DropJudgedIrrelevant,
	"SourceWorkingSet": SourceWorkingSet, "SourceStorage": SourceStorage,
	"ExtractionIdle": ExtractionIdle, "ExtractionPending": ExtractionPending, "ExtractionDone": ExtractionDone,
	"ExtractionRetrying": ExtractionRetrying,
	"ReasonInvalidField": ReasonInvalidField, "ReasonMemoryNotFound": ReasonMemoryNotFound,
	"ReasonEtagMismatch": ReasonEtagMismatch, "ReasonUnauthenticated": ReasonUnauthenticated,
	"ReasonPermissionDenied": ReasonPermissionDenied, "ReasonResourceExhausted": ReasonResourceExhausted,
	"ReasonBackendUnavailable": ReasonBackendUnavailable, "ReasonRequestIDReused": ReasonRequestIDReused,
	"ReasonInvalidState": ReasonInvalidState, "ReasonSessionNotFound": ReasonSessionNotFound,
	"RoleUser": RoleUser, "RoleAssistant": RoleAssistant, "RoleSystem": RoleSystem, "RoleTool": RoleTool,
	"SensitiveCardNumber": SensitiveCardNumber, "SensitiveNationalID": SensitiveNationalID,
	"SensitivePassport": SensitivePassport, "SensitiveIBAN": SensitiveIBAN, "SensitivePhone": SensitivePhone,
	"SensitiveEmail": SensitiveEmail, "SensitiveAPIKey": SensitiveAPIKey,
	"SensitivePrivateKey": SensitivePrivateKey, "SensitivePassword": SensitivePassword,
	"SensitiveMasked": SensitiveMasked, "SensitiveAllowed": SensitiveAllowed,
}

// shortPrefix maps each contract enum to the prefix of its short names.
var shortPrefix = map[protoreflect.FullName]string{
	"recalld.v1.MemoryType": "Type", "recalld.v1.MemoryTier": "Tier", "recalld.v1.MemoryStatus": "Status",
	"recalld.v1.WriteOutcome": "Outcome", "recalld.v1.ForgetMode": "Forget",
	"recalld.v1.ConflictResolution": "Resolution", "recalld.v1.MemoryOperation": "Operation",
	"recalld.v1.DropReason": "Drop", "recalld.v1.RecallSource": "Source",
	"recalld.v1.ExtractionState": "Extraction", "recalld.v1.ErrorReason": "Reason", "recalld.v1.MessageRole": "Role",
	"recalld.v1.SensitiveDataCategory": "Sensitive", "recalld.v1.SensitiveDataAction": "Sensitive",
}

// TestEveryEnumValueHasAShortName fails when the contract gains an enum or a
// value without a constant in types.go, or a constant names the wrong value.
func TestEveryEnumValueHasAShortName(t *testing.T) {
	have := map[protoreflect.FullName]bool{}
	for name, v := range shortNames {
		d := v.Descriptor().Values().ByNumber(v.Number())
		prefix, ok := shortPrefix[v.Descriptor().FullName()]
		if !ok {
			t.Errorf("%s: no prefix for %s", name, v.Descriptor().FullName())
			continue
		}
		// MEMORY_TYPE_FACT -> "fact"; the Go name may capitalise as it likes (RequestID).
		suffix := string(d.Name())[len(enumValuePrefix(v.Descriptor())):]
		if want := strings.ToLower(prefix + strings.ReplaceAll(suffix, "_", "")); strings.ToLower(name) != want {
			t.Errorf("%s names %s", name, d.FullName())
		}
		have[d.FullName()] = true
	}
	files := []protoreflect.FileDescriptor{
		recalldv1.File_recalld_v1_memory_proto, recalldv1.File_recalld_v1_memory_service_proto,
		recalldv1.File_recalld_v1_session_service_proto, recalldv1.File_recalld_v1_error_reason_proto,
	}
	for _, f := range files {
		for i := range f.Enums().Len() {
			e := f.Enums().Get(i)
			for j := range e.Values().Len() {
				v := e.Values().Get(j)
				if v.Number() != 0 && !have[v.FullName()] {
					t.Errorf("no short constant for %s", v.FullName())
				}
			}
		}
	}
}

// enumValuePrefix is the common prefix of an enum's value names (MEMORY_TYPE_).
func enumValuePrefix(e protoreflect.EnumDescriptor) string {
	p := string(e.Values().Get(0).Name())
	for i := 1; i < e.Values().Len(); i++ {
		n := string(e.Values().Get(i).Name())
		for !strings.HasPrefix(n, p) {
			p = p[:len(p)-1]
		}
	}
	return p[:strings.LastIndex(p, "_")+1]
}

func TestUpdateMask(t *testing.T) {
	if got := UpdateMask("content", FieldTags).GetPaths(); !slices.Equal(got, []string{"content", "tags"}) {
		t.Fatalf("paths = %v", got)
	}
	fields := (&Memory{}).ProtoReflect().Descriptor().Fields()
	for _, f := range []MemoryField{FieldContent, FieldType, FieldTier, FieldTopicKey, FieldImportance, FieldConfidence,
		FieldSource, FieldTags, FieldMetadata, FieldExpireAt, FieldOccurredAt, FieldAgentScope, FieldSessionID} {
		if fields.ByName(protoreflect.Name(f)) == nil {
			t.Errorf("%q is not a Memory field", f)
		}
	}
}
