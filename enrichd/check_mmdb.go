package enrichd

import (
	"slices"
	"strconv"
	"strings"

	"github.com/lutkit/lutkit/reader/mmdb"
)

// mmdbPathCheck finds which record paths of an .mmdb table no record has.
type mmdbPathCheck struct {
	// seen are the paths the records have (array elements as index 0),
	// for naming close ones; bounded.
	seen map[string]bool
}

// maxSeenPaths bounds the paths kept for suggestions.
const maxSeenPaths = 4096

// missingMMDBPaths returns the paths of want that no record of r holds,
// scanning each distinct record of the file once (and stopping as soon as
// every path has been found), and the paths the records do have.
func missingMMDBPaths(r *mmdb.Reader, want []string) (missing []string, have []string, err error) {
	left := map[string]bool{}
	for _, p := range want {
		left[p] = true
	}
	c := mmdbPathCheck{seen: map[string]bool{}}
	done := map[uintptr]bool{}
	for res := range r.DB().Networks() {
		if err := res.Err(); err != nil {
			return nil, nil, err
		}
		off := res.Offset()
		if done[off] {
			continue
		}
		done[off] = true
		var rec any
		if err := res.Decode(&rec); err != nil {
			return nil, nil, err
		}
		c.collect(rec, "")
		for p := range left {
			if hasPath(rec, p) {
				delete(left, p)
			}
		}
		if len(left) == 0 {
			return nil, nil, nil
		}
	}
	for _, p := range want {
		if left[p] {
			missing = append(missing, p)
		}
	}
	for p := range c.seen {
		have = append(have, p)
	}
	slices.Sort(have)
	return missing, have, nil
}

// collect records the paths of v under prefix.
func (c *mmdbPathCheck) collect(v any, prefix string) {
	if len(c.seen) >= maxSeenPaths {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := joinPath(prefix, k)
			c.seen[p] = true
			c.collect(e, p)
		}
	case []any:
		if len(x) > 0 {
			p := joinPath(prefix, "0")
			c.seen[p] = true
			c.collect(x[0], p)
		}
	}
}

func joinPath(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// hasPath reports whether the record v holds path, as the engine reads
// it (mmdb.CompileFields): map keys, and integer segments selecting array
// elements (negative from the end).
func hasPath(v any, path string) bool {
	for seg := range strings.SplitSeq(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[seg]; !ok {
				return false
			}
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil {
				return false
			}
			if i < 0 {
				i += len(x)
			}
			if i < 0 || i >= len(x) {
				return false
			}
			v = x[i]
		default:
			return false
		}
	}
	return true
}

// closeNames returns up to 3 of names closest to name (by edit distance,
// within a third of its length, at least 2), closest first.
func closeNames(name string, names []string) []string {
	type cand struct {
		s string
		d int
	}
	var cs []cand
	limit := max(2, len(name)/3)
	for _, n := range names {
		if d := editDistance(name, n); d <= limit {
			cs = append(cs, cand{n, d})
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return a.d - b.d })
	var out []string
	for i := 0; i < len(cs) && i < 3; i++ {
		out = append(out, cs[i].s)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
