package parse

import (
	"fmt"
	"strings"
	"testing"
)

func TestEachSDParam(t *testing.T) {
	f := func(sd, want string) {
		t.Helper()
		var b strings.Builder
		EachSDParam([]byte(sd), func(id, name, value []byte) bool {
			fmt.Fprintf(&b, "%s/%s=%s|", id, name, AppendSDUnescape(nil, value))
			return true
		})
		if got := b.String(); got != want {
			t.Errorf("EachSDParam(%q)\n got %q\nwant %q", sd, got, want)
		}
	}
	f(``, ``)
	f(`-`, ``)
	f(`[exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"][examplePriority@32473 class="high"]`,
		`exampleSDID@32473/iut=3|exampleSDID@32473/eventSource=Application|exampleSDID@32473/eventID=1011|examplePriority@32473/class=high|`)
	f(`[id k="a\]b\"c\\d\e"]`, `id/k=a]b"c\d\e|`)
	f(`[id][id2 k=""]`, `id/=|id2/k=|`)
	f(`[id k="v"`, `id/k=v|`) // unterminated element: params so far
	f(`[id k=v]`, ``)         // unquoted value: stop
	f(`[id k="v\"]`, ``)      // unterminated value
	f(`[a x="1"]garbage[b y="2"]`, `a/x=1|`)

	// Early stop.
	n := 0
	EachSDParam([]byte(`[a x="1" y="2"][b z="3"]`), func(id, name, value []byte) bool { n++; return false })
	if n != 1 {
		t.Errorf("early stop: %d calls", n)
	}
}
