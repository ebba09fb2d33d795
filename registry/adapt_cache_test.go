package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

// A remembered adaptation is the same as a fresh one, errors included, and the memory of
// them stays bounded however many schemas hot reloads bring.
func TestAdaptSchemaRemembers(t *testing.T) {
	free := json.RawMessage(`{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"string"}}}}`) // a map: not strict for OpenAI
	for range 2 {
		out, err := AdaptSchema(ProviderOpenAI, free)
		var ns *NotStrictError
		if !errors.As(err, &ns) || out == nil {
			t.Fatalf("want a usable schema with a *NotStrictError, got %s, %v", out, err)
		}
		want, _ := adaptSchema(ProviderOpenAI, free)
		if string(out) != string(want) {
			t.Fatalf("remembered %s, fresh %s", out, want)
		}
	}
	if _, err := AdaptSchema(ProviderOpenAI, json.RawMessage(`[1]`)); err == nil {
		t.Fatal("an array schema was adapted")
	}
	for i := range maxAdapted + 10 {
		if _, err := AdaptSchema("anthropic", json.RawMessage(fmt.Sprintf(`{"type":"object","description":"v%d"}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	adapted.Lock()
	n := len(adapted.m)
	adapted.Unlock()
	if n > maxAdapted {
		t.Fatalf("%d adaptations remembered, bound %d", n, maxAdapted)
	}
}
