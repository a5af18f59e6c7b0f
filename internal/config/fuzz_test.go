package config

import (
	"strings"
	"testing"
)

// FuzzDecode reads arbitrary bytes with the test schema: it must never
// panic, and every error must name the file and say something.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		"name: web\nmode: fast\nlisten: \"127.0.0.1:80\"\ntags: [a, b]\ndebug: true\nretries: 3\nratio: 0.5\nbuffer: 4MiB\ntimeout: 5s\nlabels: {a: b}\npeers: [{addr: \"a:1\"}]\n",
		"name: [a]\nmode: {}\n", "- x\n", "", "a: b: c\n", "name: &a x\ntags: [*a, *a]\n", "? [x]\n: y\n", "peers: [[[]]]\n", "name: ${A}\nlisten: ${C:-x}\ntags: [$$, ${B}, ${]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d := &Decoder{File: "f.yaml", Env: func(name string) (string, bool) { return map[string]string{"A": "1", "B": ""}[name], name != "C" }}
		root := d.Document(data, "")
		if root != nil {
			s := decodeServer(d, root)
			v := &Validator{File: "f.yaml", Errs: d.Errs}
			s.validate(v)
			d.Errs = v.Errs
		}
		if root == nil && len(d.Errs) == 0 {
			t.Fatal("no document and no error")
		}
		for _, e := range d.Errs {
			if msg := e.Error(); !strings.HasPrefix(msg, "f.yaml") || e.Msg == "" || e.Line < 0 || e.Column < 0 {
				t.Fatalf("bad error %q", msg)
			}
		}
	})
}
