package pullwright

// ModelProfile is what the agent must know of one model to talk to it
// well: how much context a request may fill, which parameters it takes,
// how it reasons. The operator writes one per model (models.profiles in
// the operator file, docs/configuration.md); a zero field is the agent's
// default for it.
type ModelProfile struct {
	// ContextWindow is the model's context, in tokens; ContextShare is the
	// part of it one request may fill (the rest is left for the answer and
	// for the error of counting tokens before the endpoint does).
	ContextWindow int     `yaml:"context_window" json:"context_window,omitempty"`
	ContextShare  float64 `yaml:"context_share" json:"context_share,omitempty"`
	// MaxOutputTokens bounds one answer; 0 leaves it to the endpoint.
	MaxOutputTokens int `yaml:"max_output_tokens" json:"max_output_tokens,omitempty"`
	// TokenParameter names the request field that carries MaxOutputTokens:
	// "max_tokens", or "max_completion_tokens", which reasoning models
	// require (they refuse max_tokens).
	TokenParameter string `yaml:"token_parameter" json:"token_parameter,omitempty"`
	// ReasoningEffort is sent as reasoning_effort ("low", "medium",
	// "high", …) to models that reason; "" sends none.
	ReasoningEffort string `yaml:"reasoning_effort" json:"reasoning_effort,omitempty"`
	// SystemRole is the role of the instructions message: "system", or
	// "developer" for models that expect it.
	SystemRole string `yaml:"system_role" json:"system_role,omitempty"`
	// Deployment is the Azure OpenAI deployment serving the model, when
	// the endpoint is Azure's; "" uses the model's name.
	Deployment string `yaml:"deployment" json:"deployment,omitempty"`
	// Images says the model takes pictures in its messages (OpenAI's
	// image_url content parts): the screenshots of an issue are then
	// given to it. Without it, the agent is told they were left out.
	Images bool `yaml:"images" json:"images,omitempty"`
}
