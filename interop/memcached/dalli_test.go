package memcached

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// TestDalliLogstashFilter is the ruby-dalli row: Debian's Dalli 3.0.6,
// called as logstash-filter-memcached 1.2.x calls it (testdata/
// logstash_filter.rb), with and without a namespace, reads from enrichd
// exactly the values enrichd holds, over the protocol Dalli 3.0 uses by
// default (binary), and reads the same from a real memcached holding the
// same items. The filter's set (a quiet SETQ in Dalli's multi block) is
// refused and Dalli drops the refusal, as it drops every answer of the
// block; a set outside multi raises the refusal. The reads after them are
// in step.
func TestDalliLogstashFilter(t *testing.T) {
	rb := needRuby(t, "dalli", "ruby-dalli")
	ours := startEnrichd(t, enrichdOpts{})
	real := startMemcached(t)
	keys := []string{"customers:42", "customers:7", "customers:9000", "customers:1"}
	mirror(t, ours, real, keys...)

	for _, tc := range []struct {
		name, namespace string
		events          [][]string // the keys of each event's get_multi, or a set
	}{
		{"no namespace", "", [][]string{
			{"customers:42"},
			{"customers:7", "customers:nope", "customers:9000"},
			{"customers:999999"},
			{"set:customers:w=1"},
			{"customers:1", "customers:42"},
			{"plainset:customers:w=2"},
			{"customers:42"},
		}},
		{"namespace", "customers", [][]string{
			{"42"},
			{"7", "nope", "9000"},
			{"999999"},
			{"set:w=1"},
			{"1", "42"},
			{"plainset:w=2"},
			{"42"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := map[string]*strings.Builder{"enrichd": {}, "memcached": {}}
			for _, w := range want {
				w.WriteString("protocol Dalli::Protocol::Binary\n")
			}
			args := []string{"testdata/logstash_filter.rb", "", tc.namespace}
			for i, ev := range tc.events {
				if i > 0 {
					args = append(args, "--")
				}
				args = append(args, ev...)
				switch kind, _, _ := strings.Cut(ev[0], ":"); kind {
				case "set":
					for _, w := range want {
						fmt.Fprintf(w, "event %d set returned\n", i)
					}
					continue
				case "plainset":
					fmt.Fprintf(want["memcached"], "event %d plainset returned\n", i)
					fmt.Fprintf(want["enrichd"], "event %d plainset raised Dalli::DalliError: Response error 32: Authentication required\n", i)
					continue
				}
				var hits []string
				for _, k := range ev {
					full := k
					if tc.namespace != "" {
						full = tc.namespace + ":" + k
					}
					if v, ok := value(t, ours, full); ok {
						hits = append(hits, k+"="+digest(v))
					}
				}
				sort.Strings(hits)
				for _, w := range want {
					fmt.Fprintf(w, "event %d %s\n", i, strings.Join(hits, " "))
				}
			}
			for _, server := range []struct{ name, addr string }{{"enrichd", ours}, {"memcached", real}} {
				args[1] = server.addr
				got := script(t, rb, args...)
				if w := want[server.name].String(); got != w {
					t.Errorf("Dalli against %s:\n%s\nwant:\n%s", server.name, got, w)
				}
			}
		})
	}
}
