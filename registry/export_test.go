package registry

import "encoding/json"

// HasFlatForm reports whether a tool's parameters schema compiles to a flat form (flat.go).
func HasFlatForm(toolID string, params json.RawMessage) bool {
	c, err := compile(toolID, params)
	return err == nil && c.flat != nil
}
