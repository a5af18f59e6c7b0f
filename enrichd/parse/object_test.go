package parse

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/jsonstr"
)

// TestObject: an event's parsed fields written with jsonstr.Object.
func TestObject(t *testing.T) {
	var ev Event
	msg := []byte("<134>1 2026-11-30T05:24:00.000Z web-18 app 24065 login - cust=679127 src=102.24.37.211 bad=\xff")
	if err := ParseSyslog(msg, &ev); err != nil {
		t.Fatal(err)
	}
	o := jsonstr.Object{Buf: make([]byte, 0, 256)}
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
			o.Buf = jsonstr.AppendString(o.Buf, v)
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
	var e jsonstr.Object
	e.Begin()
	if got := string(e.End()); got != "{}" {
		t.Errorf("empty object = %s", got)
	}
}
