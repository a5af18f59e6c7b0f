package enrichd

import (
	"strings"
	"testing"
)

// TestConfigEnv: values of enrichd.yaml take ${VAR} and ${VAR:-default}
// from the environment, typed by what they become; a missing variable is
// an error at its file:line:column.
func TestConfigEnv(t *testing.T) {
	t.Setenv("ENRICHD_T_LISTEN", "127.0.0.1:5514")
	t.Setenv("ENRICHD_T_WORKERS", "3")
	cfg, err := ParseConfig("e.yaml", []byte(`
inputs:
  - {type: tcp, listen: "${ENRICHD_T_LISTEN}"}
outputs:
  - {type: file, path: "${ENRICHD_T_OUT:-/tmp/enriched.json}"}
pipeline:
  workers: ${ENRICHD_T_WORKERS}
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Inputs[0].Listen != "127.0.0.1:5514" || cfg.Outputs[0].Path != "/tmp/enriched.json" || cfg.Pipeline.Workers != 3 {
		t.Fatalf("got %q %q %d", cfg.Inputs[0].Listen, cfg.Outputs[0].Path, cfg.Pipeline.Workers)
	}
	errs := configErrors(t, `
inputs:
  - type: tcp
    listen: ${ENRICHD_T_UNSET}
outputs: [{type: stdout}]
`)
	want := "e.yaml:4:13: ${ENRICHD_T_UNSET}: the environment variable ENRICHD_T_UNSET is not set"
	if len(errs) != 1 || !strings.HasPrefix(errs[0], want) {
		t.Fatalf("got %q, want %s", errs, want)
	}
}
