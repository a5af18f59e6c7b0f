package memcached

import (
	"strings"
	"testing"
)

// TestPymemcacheDefaults is the pymemcache row: Debian's pymemcache with
// its defaults sends its writes with "noreply"; enrichd refuses them
// without a word, as memcached answers nothing to a noreply write, so the
// reads that follow get their own answers. A write sent without noreply
// raises the read-only refusal, and the connection stays in step.
func TestPymemcacheDefaults(t *testing.T) {
	py := needPython(t, "pymemcache", "python3-pymemcache")
	addr := startEnrichd(t, enrichdOpts{})
	h := func(key string) string {
		v, ok := value(t, addr, key)
		if !ok {
			t.Fatalf("enrichd has no %s", key)
		}
		return digest(v)
	}
	want := strings.Join([]string{
		"set True",
		"get " + h("customers:42"),
		"delete True",
		"get_many customers:7=" + h("customers:7") + " customers:9000=" + h("customers:9000"),
		"add True",
		"replace True",
		"append True",
		"prepend True",
		"touch True",
		"set_many []",
		"delete_many True",
		"gets " + h("customers:1"),
		"get " + h("customers:42"),
		"set noreply=False raised MemcacheServerError read-only",
		"get " + h("customers:1"),
		"delete noreply=False raised MemcacheServerError read-only",
		"get None",
		"version " + wantVersion,
	}, "\n") + "\n"
	_, port, _ := strings.Cut(addr, ":")
	got := script(t, py, "testdata/pymemcache_defaults.py", "127.0.0.1", port)
	if got != want {
		t.Errorf("pymemcache against enrichd:\n%s\nwant:\n%s", got, want)
	}
}
