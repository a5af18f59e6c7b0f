package config

import (
	"os"
	"strings"
	"testing"
)

// loadEnv decodes yml with the environment expanded, returning the struct
// and the errors as text.
func loadEnv(t *testing.T, yml string) (*server, string) {
	t.Helper()
	d := &Decoder{File: "s.yaml", Env: os.LookupEnv}
	root := d.Document([]byte(yml), "")
	if root == nil {
		return nil, d.Errs.Error()
	}
	s := decodeServer(d, root)
	return s, d.Errs.Error()
}

func TestEnvExpansion(t *testing.T) {
	t.Setenv("LUTKIT_T_LISTEN", "127.0.0.1:5514")
	t.Setenv("LUTKIT_T_RETRIES", "7")
	t.Setenv("LUTKIT_T_DEBUG", "true")
	t.Setenv("LUTKIT_T_EMPTY", "")
	s, errs := loadEnv(t, `
name: "web-${LUTKIT_T_RETRIES}"
listen: ${LUTKIT_T_LISTEN}
retries: ${LUTKIT_T_RETRIES}
debug: ${LUTKIT_T_DEBUG}
mode: ${LUTKIT_T_UNSET:-fast}
tags: ["$${LUTKIT_T_LISTEN}", "a$$b", "cost $5", "end$", "${LUTKIT_T_EMPTY:-dflt}"]
timeout: ${LUTKIT_T_UNSET:-1m}
labels: {"${LUTKIT_T_RETRIES}": "${LUTKIT_T_LISTEN}"}
`)
	if errs != "" {
		t.Fatal(errs)
	}
	if s.Name != "web-7" || s.Listen != "127.0.0.1:5514" || s.Retries != 7 || !s.Debug || s.Mode != "fast" || s.Timeout.String() != "1m0s" {
		t.Fatalf("decoded %+v", s)
	}
	want := []string{"${LUTKIT_T_LISTEN}", "a$b", "cost $5", "end$", "dflt"}
	if strings.Join(s.Tags, "|") != strings.Join(want, "|") {
		t.Fatalf("tags %q, want %q", s.Tags, want)
	}
	// Keys are taken as written; values are expanded.
	if len(s.Labels) != 1 || s.Labels[0].Key != "${LUTKIT_T_RETRIES}" || s.Labels[0].Value != "127.0.0.1:5514" {
		t.Fatalf("labels %+v", s.Labels)
	}
	// Without Env, nothing is expanded.
	d := &Decoder{File: "s.yaml"}
	s = decodeServer(d, d.Document([]byte("listen: ${LUTKIT_T_LISTEN}\n"), ""))
	if s.Listen != "${LUTKIT_T_LISTEN}" {
		t.Fatalf("expanded without Env: %q", s.Listen)
	}
}

func TestEnvErrors(t *testing.T) {
	t.Setenv("LUTKIT_T_EMPTY", "")
	t.Setenv("LUTKIT_T_PORT", "x")
	for _, tc := range []struct{ yml, want string }{
		{"name: web\nlisten: ${LUTKIT_T_UNSET}\n", "s.yaml:2:9: ${LUTKIT_T_UNSET}: the environment variable LUTKIT_T_UNSET is not set (set it, or give a default: ${LUTKIT_T_UNSET:-default})"},
		{"listen: \"127.0.0.1:${LUTKIT_T_UNSET}\"\n", "s.yaml:1:20: ${LUTKIT_T_UNSET}: the environment variable LUTKIT_T_UNSET is not set"},
		{"name: ${LUTKIT_T_EMPTY}\n", "s.yaml:1:7: ${LUTKIT_T_EMPTY}: the environment variable LUTKIT_T_EMPTY is empty"},
		{"name: a${LUTKIT_T_X\n", "s.yaml:1:8: ${LUTKIT_T_X: a ${ without its closing }"},
		{"name: ${1X}\n", `s.yaml:1:7: ${1X}: "1X" is not a variable name`},
		{"name: ${}\n", `s.yaml:1:7: ${}: "" is not a variable name`},
		{"tags:\n  - ok\n  - ${LUTKIT_T_A} ${LUTKIT_T_B}\n", "s.yaml:3:5: ${LUTKIT_T_A}: the environment variable LUTKIT_T_A is not set"},
		// The value is typed by what it becomes.
		{"retries: ${LUTKIT_T_PORT}\n", `s.yaml:1:10: retries: must be an integer, not "x"`},
	} {
		_, errs := loadEnv(t, tc.yml)
		if !strings.Contains(errs, tc.want) {
			t.Errorf("%q:\n got %s\nwant %s", tc.yml, errs, tc.want)
		}
	}
	// Every missing variable is reported, each at its column.
	_, errs := loadEnv(t, "tags:\n  - ${LUTKIT_T_A} ${LUTKIT_T_B}\n")
	if !strings.Contains(errs, "s.yaml:2:5: ${LUTKIT_T_A}") || !strings.Contains(errs, "s.yaml:2:19: ${LUTKIT_T_B}") {
		t.Errorf("got %s", errs)
	}
}

func TestSyntaxErrorLine(t *testing.T) {
	for _, tc := range []struct {
		yml  string
		line int
	}{
		// The parser names line 1 (where the top-level mapping began).
		{"name: web\npeers:\n  - addr: a\n   mode: x\n", 4},
		{"name: web\nmode: fast\npeers:\n  - addr: a\n - addr: b\n", 5},
		{"a: 1\nb:\n  c: 2\n d: 3\n", 4},
		{"name: web\nlisten: 'x\nmode: fast\n", 2},
		{"name: web\n\tmode: fast\n", 2},
	} {
		d := &Decoder{File: "s.yaml"}
		if d.Document([]byte(tc.yml), "") != nil || len(d.Errs) != 1 {
			t.Fatalf("%q: no syntax error", tc.yml)
		}
		if e := d.Errs[0]; e.Line != tc.line || !strings.HasPrefix(e.Msg, "not valid YAML: ") {
			t.Errorf("%q: %v, want line %d", tc.yml, e, tc.line)
		}
	}
}
