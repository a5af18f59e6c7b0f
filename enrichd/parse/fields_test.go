package parse

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestKV(t *testing.T) {
	f := func(msg, key, want string) {
		t.Helper()
		for run := 0; run < 2; run++ {
			v, ok := KV([]byte(msg), []byte(key))
			got := "<absent>"
			if ok {
				got = string(v)
				if v == nil {
					t.Errorf("KV(%q, %q): ok with nil value", msg, key)
				}
			}
			if got != want {
				t.Errorf("KV(%q, %q) = %q, want %q", msg, key, got, want)
			}
		}
	}
	f("cust=1 src=2", "cust", "1")
	f("cust=1 src=2", "src", "2")
	f("xcust=1 cust=2", "cust", "2")
	f("custx=1", "cust", "<absent>")
	f("cust", "cust", "<absent>")
	f("a cust b", "cust", "<absent>")
	f("cust= src=2", "cust", "")
	f("cust=", "cust", "")
	f("cust=1 cust=2", "cust", "1")
	f(`k="a b" cust=3`, "k", "a b")
	f(`k="a cust=1" cust=3`, "cust", "3")
	f(`k="a \" cust=1" cust=3`, "cust", "3")
	f(`k="a \" b"`, "k", `a \" b`)
	f(`k="unterminated cust=1`, "k", "unterminated cust=1")
	f(`k="unterminated cust=1`, "cust", "<absent>")
	f(`k="x\`, "k", `x\`)
	f(`k=""`, "k", "")
	f(`k="v"tail next=1`, "next", "1")
	f(`k="v"tail`, "k", "v")
	f("a=b=c", "a", "b=c")
	f("a=b=c", "b", "<absent>")
	f("  \tcust=7\t\tsrc=8  ", "src", "8")
	f("=x cust=1", "cust", "1")
	f("=x", "", "<absent>")
	f("", "cust", "<absent>")
	f("cust=679127 src=102.24.37.211 action=login", "action", "login")
	f("ünï=ä cust=1", "ünï", "ä")
}

func TestEachKV(t *testing.T) {
	f := func(msg, want string) {
		t.Helper()
		var b strings.Builder
		EachKV([]byte(msg), func(k, v []byte) bool {
			fmt.Fprintf(&b, "%s=%s|", k, v)
			return true
		})
		if got := b.String(); got != want {
			t.Errorf("EachKV(%q) = %q, want %q", msg, got, want)
		}
	}
	f("", "")
	f("no pairs here", "")
	f("cust=679127 src=102.24.37.211 action=login", "cust=679127|src=102.24.37.211|action=login|")
	f(`Accepted password for root from 1.2.3.4 port=22 user="root admin" x=`, "port=22|user=root admin|x=|")
	n := 0
	EachKV([]byte("a=1 b=2 c=3"), func(k, v []byte) bool { n++; return n < 2 })
	if n != 2 {
		t.Errorf("early stop: %d calls", n)
	}
}

func TestExtractor(t *testing.T) {
	f := func(keys []string, msg string, want ...string) {
		t.Helper()
		x := NewExtractor(keys)
		vals := make([][]byte, len(keys)+1)
		vals[len(keys)] = []byte("untouched")
		for run := 0; run < 2; run++ {
			x.Extract([]byte(msg), vals)
			for i, k := range keys {
				got := "<nil>"
				if vals[i] != nil {
					got = string(vals[i])
				}
				if got != want[i] {
					t.Errorf("Extract(%q) key %q = %q, want %q", msg, k, got, want[i])
				}
				// Must agree with KV.
				v, ok := KV([]byte(msg), []byte(k))
				if ok != (vals[i] != nil) || string(v) != string(vals[i]) {
					t.Errorf("Extract(%q) key %q disagrees with KV: %q,%v", msg, k, v, ok)
				}
			}
			if string(vals[len(keys)]) != "untouched" {
				t.Errorf("Extract wrote past its keys")
			}
		}
	}
	f([]string{"cust", "src"}, "cust=1 src=2", "1", "2")
	f([]string{"cust", "src"}, "src=2", "<nil>", "2")
	f([]string{"cust", "src"}, "xcust=1 cust=3 cust=4", "3", "<nil>")
	f([]string{"cust", "src"}, "cust= src", "", "<nil>")
	f([]string{"cust", "cust", "src"}, "src=9 cust=8", "8", "8", "9")
	f([]string{}, "cust=1")
	f([]string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}, "j=10 a=1 zz=3 e=5", "1", "<nil>", "<nil>", "<nil>", "5", "<nil>", "<nil>", "<nil>", "<nil>", "10")
	long := strings.Repeat("k", 100)
	f([]string{long, "x"}, long+"=v "+long+"k=w", "v", "<nil>")
}

func TestJSONField(t *testing.T) {
	f := func(body, path string, wantKind byte, want string) {
		t.Helper()
		v, kind, ok := JSONField([]byte(body), []byte(path))
		if !ok {
			if wantKind != 0 {
				t.Errorf("JSONField(%q, %q) not found, want %c %q", body, path, wantKind, want)
			}
			return
		}
		if kind != wantKind || string(v) != want {
			t.Errorf("JSONField(%q, %q) = %c %q, want %c %q", body, path, kind, v, wantKind, want)
		}
	}
	const gen = `{"host":"web-18","cust":"679127","src":"102.24.37.211","action":"login"}`
	f(gen, "host", '"', "web-18")
	f(gen, "action", '"', "login")
	f(gen, "missing", 0, "")
	f(gen, "", 0, "")
	body := ` { "a" : 1 , "s":"x\"y\\z", "n": null, "t": true, "f": false, "neg": -1.5e3,
		"arr": [1, {"a": "]"}, "[", "}"], "source": {"ip": "1.2.3.4", "geo": {"cc": "DE"}, "port": 80},
		"source.ip": "flat", "e": {}, "u": "\u00e9" }`
	f(body, "a", '0', "1")
	f(body, "s", '\\', `x\"y\\z`)
	f(body, "n", 'n', "null")
	f(body, "t", 'b', "true")
	f(body, "f", 'b', "false")
	f(body, "neg", '0', "-1.5e3")
	f(body, "arr", '[', `[1, {"a": "]"}, "[", "}"]`)
	f(body, "source", '{', `{"ip": "1.2.3.4", "geo": {"cc": "DE"}, "port": 80}`)
	f(body, "source.ip", '"', "1.2.3.4")
	f(body, "source.port", '0', "80")
	f(body, "source.geo.cc", '"', "DE")
	f(body, "source.geo.xx", 0, "")
	f(body, "source.nope", 0, "")
	f(body, "e", '{', "{}")
	f(body, "e.x", 0, "")
	f(body, "u", '\\', `\u00e9`)
	f(body, "a.b", 0, "")
	f(`{"source.ip":"flat","source":{"ip":"nested"}}`, "source.ip", '"', "flat")
	f(`{"a":{"b":1},"a.b":2}`, "a.b", '0', "1")
	f(`{"a":"x","a":"y"}`, "a", '"', "x")
	f(`{"k":"v"`, "k", '"', "v")
	// Invalid or non-object bodies.
	for _, b := range []string{``, `[]`, `"k"`, `{`, `{"k"`, `{"k":`, `{"k" 1}`, `{"x":1 "k":2}`, `{"x":[1,"k":2}`, `{"x":"]}`, `{k:1}`, `{"k":}`, `{"k":,}`} {
		f(b, "k", 0, "")
	}
}

func TestAppendUnquote(t *testing.T) {
	f := func(raw, want string) {
		t.Helper()
		if got := string(AppendUnquote([]byte(">"), []byte(raw))); got != ">"+want {
			t.Errorf("AppendUnquote(%q) = %q, want %q", raw, got[1:], want)
		}
	}
	f(``, ``)
	f(`plain`, `plain`)
	f(`"quoted"`, `quoted`)
	f(`a\"b\\c\/d\be\ff\ng\rh\ti`, "a\"b\\c/d\be\ff\ng\rh\ti")
	f(`\u00e9\u20AC`, "é€")
	f(`\ud83d\ude00`, "😀")
	f(`\ud83d`, "\uFFFD")
	f(`\ud83dx`, "\uFFFDx")
	f(`\ude00\ud83d`, "\uFFFD\uFFFD")
	f(`\ud83d\u0041`, "\uFFFDA")
	f(`\u12`, `\u12`)
	f(`\uzzzz`, `\uzzzz`)
	f(`\x`, `\x`)
	f(`end\`, `end\`)
	// Agreement with encoding/json on valid literals.
	for _, lit := range []string{`"a\u0000b"`, `"\ud800\udc00"`, `"x\/y"`, `"tab\there"`} {
		var s string
		if err := json.Unmarshal([]byte(lit), &s); err != nil {
			t.Fatal(err)
		}
		f(lit, s)
	}
}

// TestExtractPlain: messages without quotes, with tokens of every length
// around the 8-byte words values are scanned in, separated by SPs and
// tabs, give each key by Extract and by KV the value the tokeniser
// (EachKV) finds.
func TestExtractPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	keys := []string{"cust", "src", "a", "cust", "="} // few enough for scanPlain
	x := NewExtractor(keys)
	vals := make([][]byte, len(keys))
	parts := []string{"cust=", "src=", "a=", "=", "a", "b", "!", "\xa0", ")", "c", "x=y", "\x01"}
	for range 50000 {
		var msg []byte
		for range rng.IntN(12) {
			msg = append(msg, parts[rng.IntN(len(parts))]...)
			if rng.IntN(3) == 0 {
				msg = append(msg, " \t"[rng.IntN(2)])
			}
		}
		x.Extract(msg, vals)
		for j, k := range keys {
			// The tokeniser is the reference.
			var ref []byte
			EachKV(msg, func(kk, v []byte) bool {
				if string(kk) == k {
					ref = v
					return false
				}
				return true
			})
			v, ok := KV(msg, []byte(k))
			if (vals[j] != nil) != (ref != nil) || string(vals[j]) != string(ref) || ok != (ref != nil) || string(v) != string(ref) {
				t.Fatalf("%q: key %q: Extract gives %q, KV %q %v, EachKV %q", msg, k, vals[j], v, ok, ref)
			}
		}
	}
}

func TestEachArrayElem(t *testing.T) {
	for _, c := range []struct {
		arr  string
		want []string
		ok   bool
	}{
		{`[]`, nil, true},
		{` [ "a" , 1,true, null,{"x":[1]},["y"],"b\"c" ] `, []string{`s:a`, `n:1`, `b:true`, `0:null`, `o:{"x":[1]}`, `a:["y"]`, `e:b\"c`}, true},
		{`["a",`, []string{"s:a"}, false},
		{`["a" "b"]`, []string{"s:a"}, false},
		{`{"a":1}`, nil, false},
	} {
		var got []string
		ok := EachArrayElem([]byte(c.arr), func(v []byte, kind byte) bool {
			k := map[byte]string{KindString: "s", KindNumber: "n", KindBool: "b", KindNull: "0", KindObject: "o", KindArray: "a", KindEscaped: "e"}[kind]
			got = append(got, k+":"+string(v))
			return true
		})
		if ok != c.ok || strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s: %q %v, want %q %v", c.arr, got, ok, c.want, c.ok)
		}
	}
}
