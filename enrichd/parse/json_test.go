package parse

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// checkJSONString verifies that out is a valid JSON string literal that
// decodes to in with invalid UTF-8 handled as strings.ToValidUTF8 does.
func checkJSONString(t testing.TB, in string, out []byte) {
	t.Helper()
	if !json.Valid(out) {
		t.Fatalf("AppendString(%q) = %s: invalid JSON", in, out)
	}
	var got string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("AppendString(%q) = %s: %v", in, out, err)
	}
	if want := strings.ToValidUTF8(in, "\uFFFD"); got != want {
		t.Fatalf("AppendString(%q) decodes to %q, want %q", in, got, want)
	}
}

func TestAppendString(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		out := AppendString([]byte("x"), []byte(in))
		if string(out) != "x"+want {
			t.Errorf("AppendString(%q) = %s, want %s", in, out[1:], want)
		}
		if s := AppendStringS([]byte("x"), in); string(s) != string(out) {
			t.Errorf("AppendStringS(%q) = %s, want %s", in, s, out)
		}
		checkJSONString(t, in, out[1:])
	}
	f("", `""`)
	f("plain ascii ~!@#$%^&*()", `"plain ascii ~!@#$%^&*()"`)
	f(`q"b\s/`, `"q\"b\\s/"`)
	f("\n\r\t\x00\x01\x1f\x7f", `"\n\r\t\u0000\u0001\u001f`+"\x7f"+`"`)
	f("<html>&amp;", `"<html>&amp;"`)
	f("ünïcødé €😀", `"ünïcødé €😀"`)
	f("\u2028x\u2029", `"\u2028x\u2029"`)
	f("\xff", `"\ufffd"`)
	f("a\xff\xfe\xfdb", `"a\ufffdb"`)
	f("a\xffé\xfeb", `"a\ufffdé\ufffdb"`)
	f("\xc3", `"\ufffd"`)           // truncated 2-byte sequence
	f("\xe2\x82", `"\ufffd"`)       // truncated 3-byte sequence
	f("\xed\xa0\x80", `"\ufffd"`)   // surrogate half
	f("\xc0\xaf", `"\ufffd"`)       // overlong
	f("\xef\xbf\xbd", "\"\uFFFD\"") // a real U+FFFD stays as is
	f("\xf4\x90\x80\x80", `"\ufffd"`)
	f("x\x00\xff\x00", `"x\u0000\ufffd\u0000"`)

	// Every single byte and every byte pair.
	for a := 0; a < 256; a++ {
		checkJSONString(t, string([]byte{byte(a)}), AppendString(nil, []byte{byte(a)}))
		for b := 0; b < 256; b += 7 {
			in := []byte{byte(a), byte(b), 'z'}
			checkJSONString(t, string(in), AppendString(nil, in))
		}
	}
}

func TestAppendKey(t *testing.T) {
	if got := string(AppendKey(nil, []byte(`k"`))); got != `"k\"":` {
		t.Errorf("AppendKey = %s", got)
	}
	if got := string(AppendKeyS([]byte("{"), "k")); got != `{"k":` {
		t.Errorf("AppendKeyS = %s", got)
	}
}

func TestObject(t *testing.T) {
	var ev Event
	msg := []byte("<134>1 2026-11-30T05:24:00.000Z web-18 app 24065 login - cust=679127 src=102.24.37.211 bad=\xff")
	if err := ParseSyslog(msg, &ev); err != nil {
		t.Fatal(err)
	}
	o := Object{Buf: make([]byte, 0, 256)}
	for run := 0; run < 2; run++ {
		o.Buf = o.Buf[:0]
		o.Begin()
		o.Key("@timestamp")
		o.Buf = append(AppendTimestampRFC3339(append(o.Buf, '"'), &ev, time.Now()), '"')
		o.String("host", ev.Host)
		o.Int("severity", int64(ev.Severity))
		o.Bool("malformed", ev.Malformed)
		o.StringS("format", ev.Format.String())
		o.Key("kv")
		o.Begin()
		EachKV(ev.Message, func(k, v []byte) bool {
			o.KeyB(k)
			o.Buf = AppendString(o.Buf, v)
			return true
		})
		o.EndNested()
		o.Raw("raw", []byte(`[1,2]`))
		out := o.End()
		want := `{"@timestamp":"2026-11-30T05:24:00.000Z","host":"web-18","severity":6,"malformed":false,"format":"rfc5424",` +
			`"kv":{"cust":"679127","src":"102.24.37.211","bad":"\ufffd"},"raw":[1,2]}`
		if string(out) != want || !json.Valid(out) {
			t.Fatalf("Object:\n got %s\nwant %s", out, want)
		}
	}
	var e Object
	e.Begin()
	if got := string(e.End()); got != "{}" {
		t.Errorf("empty object = %s", got)
	}
}
