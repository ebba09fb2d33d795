package registry

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// Every draft the schema library knows works, also when its meta-schema is first needed by
// many compilations at once (third_party/jsonschema-v5 compiles meta-schemas on first use,
// not at init): each schema is checked against its draft's meta-schema, and validates.
func TestSchemasOfEveryDraftCompileConcurrently(t *testing.T) {
	drafts := []string{
		"http://json-schema.org/draft-04/schema#",
		"http://json-schema.org/draft-06/schema#",
		"http://json-schema.org/draft-07/schema#",
		"https://json-schema.org/draft/2019-09/schema",
		"https://json-schema.org/draft/2020-12/schema",
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8*len(drafts))
	for i := range 8 {
		for _, d := range drafts {
			wg.Go(func() {
				id := fmt.Sprintf("t%d", i)
				good := fmt.Sprintf(`{"$schema":%q,"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}`, d)
				s, err := CompileSchema(id, json.RawMessage(good))
				if err != nil {
					errs <- fmt.Errorf("%s: %v", d, err)
					return
				}
				if err := validate(s, id, []byte(`{"n":2}`)); err != nil {
					errs <- fmt.Errorf("%s: valid arguments refused: %v", d, err)
				}
				if err := validate(s, id, []byte(`{"n":0}`)); err == nil || !strings.Contains(err.Error(), "n") {
					errs <- fmt.Errorf("%s: n=0 accepted or not named: %v", d, err)
				}
				// A schema its draft's meta-schema refuses is refused.
				bad := fmt.Sprintf(`{"$schema":%q,"type":"object","properties":{"n":{"type":"integer","minimum":"one"}}}`, d)
				if _, err := CompileSchema(id, json.RawMessage(bad)); err == nil {
					errs <- fmt.Errorf("%s: minimum \"one\" accepted by the meta-schema", d)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
