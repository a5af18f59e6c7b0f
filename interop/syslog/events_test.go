package syslog

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// input is one generated event, as the test sends it to a sender.
type input struct {
	seq  string
	wire []byte // the syslog message, without framing
}

var (
	genHosts = []string{"web-1", "db-2.example.com", "10.1.2.3", "edge_7", "api-gw-3"}
	genApps  = []string{"billing-api", "sshd", "nginx", "postfix/smtpd", "cron", "app.worker_2", "kernel"}
	// longer than the 32 bytes of TAG that rsyslog forwards (RFC 5424
	// allows 48 for APP-NAME).
	genLongApps = []string{"com.example.billing.reconciliation-worker", "abcdefghijabcdefghijabcdefghij12"}
	genPIDs     = []string{"42", "31337", "1", "worker-7"}
	genMsgIDs   = []string{"ID47", "login", "txn.commit"}
	genZones    = []*time.Location{time.UTC, time.FixedZone("", 2*3600), time.FixedZone("", -(5*3600 + 1800))}
	genBodies   = []string{
		"id=2 cust=18 action=login",
		`user="Zoë O'Brien" note="say \"hi\" = ok" path='C:\temp\x'`,
		"expr=a=b==c url=http://x.example/p?a=1&b=2 empty= ===",
		"city=Zürich 東京 ✓ ünïcødé emoji=🙂",
		"tab\there  two  spaces",
	}
)

// genEvents returns n events mixing RFC 5424 and RFC 3164: PROCID "-",
// TAGs with and without ':' and "[pid]", TAGs longer than 32 bytes, hosts
// present and absent (RFC 3164), structured data, UTF-8, quotes, '=' in
// values and 8 KB messages. Every message starts with "seq=NNNNNN", which
// identifies the event wherever it arrives. Timestamps lie in the ten
// minutes before now.
func genEvents(n int, seed uint64, now time.Time) []input {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	base := now.Add(-10 * time.Minute)
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	evs := make([]input, n)
	for i := range evs {
		seq := fmt.Sprintf("%06d", i)
		body := pick(genBodies)
		if r.IntN(20) == 0 {
			body = bigBody(8192 - len("seq=000000 "))
		}
		msg := "seq=" + seq + " " + body
		pri := r.IntN(24)*8 + r.IntN(8)
		host := pick(genHosts)
		app := pick(genApps)
		if r.IntN(12) == 0 {
			app = pick(genLongApps)
		}
		pid := ""
		if r.IntN(5) >= 2 {
			pid = pick(genPIDs)
		}
		ts := base.Add(time.Duration(i)*10*time.Millisecond + time.Duration(r.IntN(1000000))*time.Microsecond)
		var b strings.Builder
		if r.IntN(2) == 0 {
			// RFC 5424.
			ts = ts.In(genZones[r.IntN(len(genZones))])
			layout := "2006-01-02T15:04:05.000000Z07:00"
			if r.IntN(4) == 0 {
				layout = time.RFC3339
			}
			msgid, sd := "-", "-"
			if r.IntN(2) == 0 {
				msgid = pick(genMsgIDs)
			}
			if r.IntN(3) == 0 {
				sd = `[ex@32473 iut="3" q="a \"b\" c\]"]`
			}
			fmt.Fprintf(&b, "<%d>1 %s %s %s %s %s %s %s", pri, ts.Format(layout), host, app, dash(pid), msgid, sd, msg)
		} else {
			// RFC 3164: the TAG with or without [pid] and ':'; a TAG
			// without ':' only after a HOST (without one, the TAG would be
			// read as the HOST, by rsyslog and syslog-ng alike).
			ts = ts.UTC()
			switch k := r.IntN(10); {
			case k < 8:
				fmt.Fprintf(&b, "<%d>%s ", pri, ts.Format(time.Stamp))
			case k < 9:
				fmt.Fprintf(&b, "<%d>%s ", pri, ts.Format(time.StampMilli))
			default:
				fmt.Fprintf(&b, "<%d>%s ", pri, ts.Format("2006-01-02T15:04:05.000000Z07:00"))
			}
			colon := r.IntN(2) == 0
			if r.IntN(10) == 0 {
				colon = true
			} else {
				b.WriteString(host + " ")
			}
			b.WriteString(app)
			if pid != "" {
				b.WriteString("[" + pid + "]")
			}
			if colon {
				b.WriteString(":")
			}
			b.WriteString(" " + msg)
		}
		evs[i] = input{seq: seq, wire: []byte(b.String())}
	}
	return evs
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// bigBody returns n bytes of key=value text with quotes and UTF-8.
func bigBody(n int) string {
	const chunk = `k="v = \"q\"" ü=東京 `
	var b strings.Builder
	for b.Len()+len(chunk) <= n {
		b.WriteString(chunk)
	}
	for b.Len() < n {
		b.WriteByte('x')
	}
	return b.String()
}
