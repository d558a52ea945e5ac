package recalld

import recalldv1 "github.com/recalld/recalld/clients/go/gen/recalld/v1"

// Aliases of the generated types, so that most callers need only this
// package. Enum values are the generated constants, for example
// recalldv1.MemoryType_MEMORY_TYPE_FACT.
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
	GetRequest     = recalldv1.GetRequest
	GetResponse    = recalldv1.GetResponse
	ListRequest    = recalldv1.ListRequest
	ListResponse   = recalldv1.ListResponse
	UpdateRequest  = recalldv1.UpdateRequest
	UpdateResponse = recalldv1.UpdateResponse
	ForgetRequest  = recalldv1.ForgetRequest
	ForgetResponse = recalldv1.ForgetResponse
	MemorySelector = recalldv1.MemorySelector

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

// Message roles, for NewMessage.
const (
	RoleUser      = recalldv1.MessageRole_MESSAGE_ROLE_USER
	RoleAssistant = recalldv1.MessageRole_MESSAGE_ROLE_ASSISTANT
	RoleSystem    = recalldv1.MessageRole_MESSAGE_ROLE_SYSTEM
	RoleTool      = recalldv1.MessageRole_MESSAGE_ROLE_TOOL
)

// NewMessage is a message to append: NewMessage(RoleUser, "I prefer tea").
func NewMessage(role MessageRole, content string) *Message {
	return &Message{Role: role, Content: content}
}
