package recalld

import (
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	recalldv1 "github.com/recalld/recalld/clients/go/gen/recalld/v1"
)

// Aliases of the generated types, so that callers need only this package.
// Every enum value has a short name below (TypeFact for
// recalldv1.MemoryType_MEMORY_TYPE_FACT).
type (
	Memory         = recalldv1.Memory
	MemoryType     = recalldv1.MemoryType
	MemoryTier     = recalldv1.MemoryTier
	MemoryStatus   = recalldv1.MemoryStatus
	ErrorReason    = recalldv1.ErrorReason
	WriteOutcome   = recalldv1.WriteOutcome
	ForgetMode     = recalldv1.ForgetMode
	WriteRequest   = recalldv1.WriteRequest
	WriteResponse  = recalldv1.WriteResponse
	WriteResult    = recalldv1.WriteResult
	RecallRequest  = recalldv1.RecallRequest
	RecallResponse = recalldv1.RecallResponse
	RecalledMemory = recalldv1.RecalledMemory
	RecallSource   = recalldv1.RecallSource
	GetRequest     = recalldv1.GetRequest
	GetResponse    = recalldv1.GetResponse
	ListRequest    = recalldv1.ListRequest
	ListResponse   = recalldv1.ListResponse
	UpdateRequest  = recalldv1.UpdateRequest
	UpdateResponse = recalldv1.UpdateResponse
	ForgetRequest  = recalldv1.ForgetRequest
	ForgetResponse = recalldv1.ForgetResponse
	MemorySelector = recalldv1.MemorySelector

	SensitiveDataFinding  = recalldv1.SensitiveDataFinding
	SensitiveDataCategory = recalldv1.SensitiveDataCategory
	SensitiveDataAction   = recalldv1.SensitiveDataAction

	RestoreRequest          = recalldv1.RestoreRequest
	RestoreResponse         = recalldv1.RestoreResponse
	ConfirmRequest          = recalldv1.ConfirmRequest
	ConfirmResponse         = recalldv1.ConfirmResponse
	HistoryRequest          = recalldv1.HistoryRequest
	HistoryResponse         = recalldv1.HistoryResponse
	MemoryVersion           = recalldv1.MemoryVersion
	MemoryOperation         = recalldv1.MemoryOperation
	ListConflictsRequest    = recalldv1.ListConflictsRequest
	ListConflictsResponse   = recalldv1.ListConflictsResponse
	Conflict                = recalldv1.Conflict
	ConflictResolution      = recalldv1.ConflictResolution
	ResolveConflictRequest  = recalldv1.ResolveConflictRequest
	ResolveConflictResponse = recalldv1.ResolveConflictResponse
	ConsolidateRequest      = recalldv1.ConsolidateRequest
	ConsolidateResponse     = recalldv1.ConsolidateResponse

	GetProfileRequest  = recalldv1.GetProfileRequest
	GetProfileResponse = recalldv1.GetProfileResponse
	Profile            = recalldv1.Profile
	ScoreBreakdown     = recalldv1.ScoreBreakdown
	RecallCandidate    = recalldv1.RecallCandidate
	DropReason         = recalldv1.DropReason

	Message                = recalldv1.Message
	MessageRole            = recalldv1.MessageRole
	Session                = recalldv1.Session
	ExtractionStatus       = recalldv1.ExtractionStatus
	ExtractionState        = recalldv1.ExtractionState
	TokenAccount           = recalldv1.TokenAccount
	AppendMessagesRequest  = recalldv1.AppendMessagesRequest
	AppendMessagesResponse = recalldv1.AppendMessagesResponse
	GetContextRequest      = recalldv1.GetContextRequest
	GetContextResponse     = recalldv1.GetContextResponse
	GetSessionRequest      = recalldv1.GetSessionRequest
	GetSessionResponse     = recalldv1.GetSessionResponse
	ListSessionsRequest    = recalldv1.ListSessionsRequest
	ListSessionsResponse   = recalldv1.ListSessionsResponse
	EndSessionRequest      = recalldv1.EndSessionRequest
	EndSessionResponse     = recalldv1.EndSessionResponse
)

// Memory types.
const (
	TypeFact       = recalldv1.MemoryType_MEMORY_TYPE_FACT
	TypePreference = recalldv1.MemoryType_MEMORY_TYPE_PREFERENCE
	TypeEvent      = recalldv1.MemoryType_MEMORY_TYPE_EVENT
	TypeState      = recalldv1.MemoryType_MEMORY_TYPE_STATE
	TypeDecision   = recalldv1.MemoryType_MEMORY_TYPE_DECISION
	TypeTask       = recalldv1.MemoryType_MEMORY_TYPE_TASK
	TypeSkill      = recalldv1.MemoryType_MEMORY_TYPE_SKILL
	TypeSummary    = recalldv1.MemoryType_MEMORY_TYPE_SUMMARY
)

// Memory tiers (priorities): P0 is core, always in the profile.
const (
	TierP0 = recalldv1.MemoryTier_MEMORY_TIER_P0
	TierP1 = recalldv1.MemoryTier_MEMORY_TIER_P1
	TierP2 = recalldv1.MemoryTier_MEMORY_TIER_P2
)

// Memory statuses.
const (
	StatusActive     = recalldv1.MemoryStatus_MEMORY_STATUS_ACTIVE
	StatusSuperseded = recalldv1.MemoryStatus_MEMORY_STATUS_SUPERSEDED
	StatusArchived   = recalldv1.MemoryStatus_MEMORY_STATUS_ARCHIVED
	StatusDraft      = recalldv1.MemoryStatus_MEMORY_STATUS_DRAFT
	StatusConflict   = recalldv1.MemoryStatus_MEMORY_STATUS_CONFLICT
)

// What a Write did with each memory (WriteResult.Outcome).
const (
	OutcomeCreated    = recalldv1.WriteOutcome_WRITE_OUTCOME_CREATED
	OutcomeDuplicate  = recalldv1.WriteOutcome_WRITE_OUTCOME_DUPLICATE
	OutcomeSuperseded = recalldv1.WriteOutcome_WRITE_OUTCOME_SUPERSEDED
	OutcomeConflict   = recalldv1.WriteOutcome_WRITE_OUTCOME_CONFLICT
	OutcomeDraft      = recalldv1.WriteOutcome_WRITE_OUTCOME_DRAFT
)

// Forget modes.
const (
	ForgetSoft = recalldv1.ForgetMode_FORGET_MODE_SOFT
	ForgetHard = recalldv1.ForgetMode_FORGET_MODE_HARD
)

// Decisions on a parked conflict (ResolveConflictRequest.Resolution).
const (
	ResolutionKeepExisting = recalldv1.ConflictResolution_CONFLICT_RESOLUTION_KEEP_EXISTING
	ResolutionAcceptNew    = recalldv1.ConflictResolution_CONFLICT_RESOLUTION_ACCEPT_NEW
	ResolutionKeepBoth     = recalldv1.ConflictResolution_CONFLICT_RESOLUTION_KEEP_BOTH
)

// History operations (MemoryVersion.Operation).
const (
	OperationWrite       = recalldv1.MemoryOperation_MEMORY_OPERATION_WRITE
	OperationUpdate      = recalldv1.MemoryOperation_MEMORY_OPERATION_UPDATE
	OperationForget      = recalldv1.MemoryOperation_MEMORY_OPERATION_FORGET
	OperationSupersede   = recalldv1.MemoryOperation_MEMORY_OPERATION_SUPERSEDE
	OperationConsolidate = recalldv1.MemoryOperation_MEMORY_OPERATION_CONSOLIDATE
	OperationResolve     = recalldv1.MemoryOperation_MEMORY_OPERATION_RESOLVE
	OperationRestore     = recalldv1.MemoryOperation_MEMORY_OPERATION_RESTORE
	OperationConfirm     = recalldv1.MemoryOperation_MEMORY_OPERATION_CONFIRM
	OperationRefresh     = recalldv1.MemoryOperation_MEMORY_OPERATION_REFRESH
	// OperationPurge is the tombstone left in history by the retention purge.
	OperationPurge = recalldv1.MemoryOperation_MEMORY_OPERATION_PURGE
)

// Sensitive-data categories (SensitiveDataFinding.Category).
const (
	SensitiveCardNumber = recalldv1.SensitiveDataCategory_SENSITIVE_DATA_CATEGORY_CARD_NUMBER
	SensitiveNationalID = recalldv1.SensitiveDataCategory_SENSITIVE_DATA_CATEGORY_NATIONAL_ID
	SensitivePassport   = recalldv1.SensitiveDataCategory_SENSITIVE_DATA_CATEGORY_PASSPORT
	SensitiveIBAN       = recalldv1.SensitiveDataCategory_SENSITIVE_DATA_CATEGORY_IBAN
	SensitivePhone      = recalldv1.SensitiveDataCategory_SENSITIVE_DATA_CATEGORY_PHONE
	SensitiveEmail      = recalldv1.SensitiveDataCategory_SENSITIVE_DATA_CATEGORY_EMAIL
	SensitiveAPIKey     = recalldv1.SensitiveDataCategory_SENSITIVE_DATA_CATEGORY_API_KEY
	SensitivePrivateKey = recalldv1.SensitiveDataCategory_SENSITIVE_DATA_CATEGORY_PRIVATE_KEY
	SensitivePassword   = recalldv1.SensitiveDataCategory_SENSITIVE_DATA_CATEGORY_PASSWORD
)

// What the server did with the sensitive values it found (SensitiveDataFinding.Action).
const (
	SensitiveMasked  = recalldv1.SensitiveDataAction_SENSITIVE_DATA_ACTION_MASKED
	SensitiveAllowed = recalldv1.SensitiveDataAction_SENSITIVE_DATA_ACTION_ALLOWED
)

// Why Recall with Explain dropped a candidate (RecallCandidate.DropReason).
const (
	DropBelowThreshold   = recalldv1.DropReason_DROP_REASON_BELOW_THRESHOLD
	DropExpired          = recalldv1.DropReason_DROP_REASON_EXPIRED
	DropSuperseded       = recalldv1.DropReason_DROP_REASON_SUPERSEDED
	DropOtherScope       = recalldv1.DropReason_DROP_REASON_OTHER_SCOPE
	DropOverBudget       = recalldv1.DropReason_DROP_REASON_OVER_BUDGET
	DropDuplicate        = recalldv1.DropReason_DROP_REASON_DUPLICATE
	DropBeyondTopK       = recalldv1.DropReason_DROP_REASON_BEYOND_TOP_K
	DropInactive         = recalldv1.DropReason_DROP_REASON_INACTIVE
	DropFiltered         = recalldv1.DropReason_DROP_REASON_FILTERED
	DropJudgedIrrelevant = recalldv1.DropReason_DROP_REASON_JUDGED_IRRELEVANT
)

// Where Recall found a memory.
const (
	SourceWorkingSet = recalldv1.RecallSource_RECALL_SOURCE_WORKING_SET
	SourceStorage    = recalldv1.RecallSource_RECALL_SOURCE_STORAGE
)

// Session extraction states.
const (
	ExtractionIdle     = recalldv1.ExtractionState_EXTRACTION_STATE_IDLE
	ExtractionPending  = recalldv1.ExtractionState_EXTRACTION_STATE_PENDING
	ExtractionDone     = recalldv1.ExtractionState_EXTRACTION_STATE_DONE
	ExtractionRetrying = recalldv1.ExtractionState_EXTRACTION_STATE_RETRYING
)

// Error reasons, as returned by Error.ErrorReason.
const (
	ReasonInvalidField       = recalldv1.ErrorReason_ERROR_REASON_INVALID_FIELD
	ReasonMemoryNotFound     = recalldv1.ErrorReason_ERROR_REASON_MEMORY_NOT_FOUND
	ReasonEtagMismatch       = recalldv1.ErrorReason_ERROR_REASON_ETAG_MISMATCH
	ReasonUnauthenticated    = recalldv1.ErrorReason_ERROR_REASON_UNAUTHENTICATED
	ReasonPermissionDenied   = recalldv1.ErrorReason_ERROR_REASON_PERMISSION_DENIED
	ReasonResourceExhausted  = recalldv1.ErrorReason_ERROR_REASON_RESOURCE_EXHAUSTED
	ReasonBackendUnavailable = recalldv1.ErrorReason_ERROR_REASON_BACKEND_UNAVAILABLE
	ReasonRequestIDReused    = recalldv1.ErrorReason_ERROR_REASON_REQUEST_ID_REUSED
	ReasonInvalidState       = recalldv1.ErrorReason_ERROR_REASON_INVALID_STATE
	ReasonSessionNotFound    = recalldv1.ErrorReason_ERROR_REASON_SESSION_NOT_FOUND
)

// Message roles, for NewMessage.
const (
	RoleUser      = recalldv1.MessageRole_MESSAGE_ROLE_USER
	RoleAssistant = recalldv1.MessageRole_MESSAGE_ROLE_ASSISTANT
	RoleSystem    = recalldv1.MessageRole_MESSAGE_ROLE_SYSTEM
	RoleTool      = recalldv1.MessageRole_MESSAGE_ROLE_TOOL
)

// MemoryField is a path UpdateRequest.UpdateMask may name.
type MemoryField string

// The Memory fields Update can change.
const (
	FieldContent    MemoryField = "content"
	FieldType       MemoryField = "type"
	FieldTier       MemoryField = "tier"
	FieldTopicKey   MemoryField = "topic_key"
	FieldImportance MemoryField = "importance"
	FieldConfidence MemoryField = "confidence"
	FieldSource     MemoryField = "source"
	FieldTags       MemoryField = "tags"
	FieldMetadata   MemoryField = "metadata"
	FieldExpireAt   MemoryField = "expire_at"
	FieldOccurredAt MemoryField = "occurred_at"
	FieldAgentScope MemoryField = "agent_scope"
	FieldSessionID  MemoryField = "session_id"
)

// UpdateMask names the fields an Update changes:
// UpdateMask(FieldContent, FieldTags), or UpdateMask("content", "tags").
func UpdateMask(fields ...MemoryField) *fieldmaskpb.FieldMask {
	paths := make([]string, len(fields))
	for i, f := range fields {
		paths[i] = string(f)
	}
	return &fieldmaskpb.FieldMask{Paths: paths}
}

// NewMessage is a message to append: NewMessage(RoleUser, "I prefer tea").
func NewMessage(role MessageRole, content string) *Message {
	return &Message{Role: role, Content: content}
}
