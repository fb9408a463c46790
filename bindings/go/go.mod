module github.com/libagent/libagent/bindings/go

go 1.24

// invopop/jsonschema: derives a tool's parameter JSON Schema from a Go struct (NewTypedTool).
require github.com/invopop/jsonschema v0.13.0

require (
	github.com/bahlo/generic-list-go v0.2.0 // indirect
	github.com/buger/jsonparser v1.1.2 // indirect
	github.com/mailru/easyjson v0.7.7 // indirect
	github.com/stretchr/testify v1.11.1 // indirect
	github.com/wk8/go-ordered-map/v2 v2.1.8 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
