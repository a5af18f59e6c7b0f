package sample

import (
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"time"
)

// Event formats.
const (
	RFC5424 = "rfc5424" // <134>1 2026-11-30T05:24:00.042Z web-03 shop 4242 login - cust=17 src=10.0.3.9 action=login
	RFC3164 = "rfc3164" // <134>Nov 30 05:24:00 web-03 shop[4242]: cust=17 src=10.0.3.9 action=login
	JSON    = "json"    // {"@timestamp":"2026-11-30T05:24:00.042Z","host":"web-03","app":"shop","cust":"17","src":"10.0.3.9","action":"login"}
)

// Formats lists the event formats.
var Formats = []string{RFC5424, RFC3164, JSON}

// DefaultStart is the time of event 0 unless EventOptions.Start says
// otherwise; event i is i milliseconds later.
var DefaultStart = time.Date(2026, 11, 30, 5, 24, 0, 0, time.UTC)

// EventOptions say what events to draw.
type EventOptions struct {
	Format    string    // RFC5424 (default), RFC3164 or JSON
	Seed      uint64    // the stream of events
	Customers int       // cust is drawn uniformly from 1..Customers (default 100,000)
	Miss      float64   // percent of events whose cust is in no table ("x" and digits)
	Sites     int       // src addresses inside sites come from the networks of NewSite(_, Sites, _) (default 64)
	Internal  float64   // percent of src addresses inside a site's network; the others are public IPv4
	IPv6      float64   // percent of those that are IPv6 (the others are IPv4)
	Start     time.Time // time of event 0 (default DefaultStart)
	// Domains, when not 0, gives each event a dom=<name>: with
	// probability IoC percent a name at or under one of the first Domains
	// rows of the domains table of DomainSeed (NewDomain), else a benign
	// name that no listed domain is a suffix of.
	Domains    int
	IoC        float64
	DomainSeed uint64
}

// Event is one drawn event.
type Event struct {
	Time   time.Time
	Host   string
	App    string
	PID    int
	Action string
	Cust   string
	Src    netip.Addr
	Site   int    // the site holding Src, or -1
	Dom    string // "" unless EventOptions.Domains
	Listed int    // the domain Dom is at or under, or -1
}

var (
	eventHosts   = []string{"web-01", "web-02", "web-03", "web-04", "web-05", "web-06", "api-01", "api-02", "api-03", "batch-01"}
	eventApps    = []string{"shop", "auth", "billing", "search", "gateway"}
	eventActions = []string{"login", "logout", "view", "search", "purchase", "refund", "signup"}
)

// check fills the defaults in and checks the options.
func (o *EventOptions) check() error {
	if o.Format == "" {
		o.Format = RFC5424
	}
	switch o.Format {
	case RFC5424, RFC3164, JSON:
	default:
		return fmt.Errorf("sample: unknown event format %q (want rfc5424, rfc3164 or json)", o.Format)
	}
	if o.Customers == 0 {
		o.Customers = 100000
	}
	if o.Customers < 1 {
		return fmt.Errorf("sample: %d customers: want at least 1", o.Customers)
	}
	if o.Sites == 0 {
		o.Sites = 64
	}
	if err := checkSites(o.Sites); err != nil {
		return err
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"miss", o.Miss}, {"internal", o.Internal}, {"ipv6", o.IPv6}, {"ioc", o.IoC}} {
		if p.v > 100 {
			return fmt.Errorf("sample: --%s %g: a percentage is at most 100", p.name, p.v)
		}
	}
	if o.Domains < 0 {
		return fmt.Errorf("sample: %d domains: want 0 (no dom field) or more", o.Domains)
	}
	if o.IoC > 0 && o.Domains == 0 {
		return fmt.Errorf("sample: --ioc %g needs --domains: the listed domains the events draw from", o.IoC)
	}
	if o.Start.IsZero() {
		o.Start = DefaultStart
	}
	return nil
}

// Check fills the defaults of o in and reports options that make no sense.
func (o *EventOptions) Check() error { return o.check() }

// Event returns event i (0-based). o must have been checked.
func (o *EventOptions) Event(i int) Event {
	r := newStream(o.Seed, kindEvent, i)
	e := Event{
		Time:   o.Start.Add(time.Duration(i) * time.Millisecond),
		Host:   pick(&r, eventHosts),
		App:    pick(&r, eventApps),
		PID:    100 + r.intn(65000),
		Action: pick(&r, eventActions),
		Site:   -1,
		Listed: -1,
	}
	if r.percent(o.Miss) {
		e.Cust = "x" + strconv.Itoa(r.intn(1_000_000_000))
	} else {
		e.Cust = strconv.Itoa(1 + r.intn(o.Customers))
	}
	if r.percent(o.Internal) {
		e.Site = r.intn(o.Sites)
		e.Src = siteHost(&r, o.Sites, e.Site, r.percent(o.IPv6))
	} else {
		e.Src = publicIPv4(&r)
	}
	if o.Domains > 0 {
		// A stream of its own, so that the events' other fields are
		// those of the same events without dom.
		d := newStream(o.Seed, kindDomain+1000, i)
		e.Dom, e.Listed = eventDomain(&d, o.DomainSeed, o.Domains, o.IoC)
	}
	return e
}

// siteHost draws an address of site i's network (of n sites): never the
// network's first address.
func siteHost(r *stream, n, i int, v6 bool) netip.Addr {
	if v6 {
		a := [16]byte{0xfd, 0x6c, 0x75, 0x74, byte(i >> 8), byte(i)}
		x, y := r.next(), r.next()
		for k := 6; k < 16; k++ {
			a[k] = byte(x)
			x = x>>8 | y<<56
			y >>= 8
		}
		a[15] |= 1
		return netip.AddrFrom16(a)
	}
	host := 32 - sitePrefixBits(n)
	off := uint32(i)<<host | uint32(1+r.intn(1<<host-1))
	return netip.AddrFrom4([4]byte{10, byte(off >> 16), byte(off >> 8), byte(off)})
}

// publicIPv4 draws a global unicast IPv4 address outside the private,
// shared, loopback, link-local and documentation ranges.
func publicIPv4(r *stream) netip.Addr {
	for {
		v := uint32(r.next())
		a := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		b := a.As4()
		if b[0] == 0 || b[0] >= 224 || b[3] == 0 || b[3] == 255 || a.IsPrivate() || a.IsLoopback() ||
			a.IsLinkLocalUnicast() || (b[0] == 100 && b[1]&0xc0 == 64) || b[0] == 192 && b[1] == 0 ||
			b[0] == 198 && (b[1] == 18 || b[1] == 19 || b[1] == 51) || b[0] == 203 && b[1] == 0 && b[2] == 113 {
			continue
		}
		return a
	}
}

// AppendEvent appends event i in o's format, with its newline.
func (o *EventOptions) AppendEvent(dst []byte, i int) []byte {
	e := o.Event(i)
	switch o.Format {
	case RFC3164:
		dst = append(dst, "<134>"...)
		dst = e.Time.AppendFormat(dst, time.Stamp)
		dst = append(append(append(dst, ' '), e.Host...), ' ')
		dst = append(append(dst, e.App...), '[')
		dst = strconv.AppendInt(dst, int64(e.PID), 10)
		dst = append(dst, "]: "...)
		dst = e.appendMessage(dst)
	case JSON:
		dst = append(dst, `{"@timestamp":"`...)
		dst = e.Time.AppendFormat(dst, "2006-01-02T15:04:05.000Z07:00")
		dst = append(append(append(dst, `","host":"`...), e.Host...), `","app":"`...)
		dst = append(append(append(dst, e.App...), `","cust":"`...), e.Cust...)
		dst = e.Src.AppendTo(append(dst, `","src":"`...))
		dst = append(append(append(dst, `","action":"`...), e.Action...), '"')
		if e.Dom != "" {
			dst = append(append(append(dst, `,"dom":"`...), e.Dom...), '"')
		}
		dst = append(dst, '}')
	default:
		dst = append(dst, "<134>1 "...)
		dst = e.Time.AppendFormat(dst, "2006-01-02T15:04:05.000Z07:00")
		dst = append(append(append(dst, ' '), e.Host...), ' ')
		dst = append(append(dst, e.App...), ' ')
		dst = strconv.AppendInt(dst, int64(e.PID), 10)
		dst = append(append(append(dst, ' '), e.Action...), " - "...)
		dst = e.appendMessage(dst)
	}
	return append(dst, '\n')
}

func (e *Event) appendMessage(dst []byte) []byte {
	dst = append(append(dst, "cust="...), e.Cust...)
	dst = e.Src.AppendTo(append(dst, " src="...))
	dst = append(append(dst, " action="...), e.Action...)
	if e.Dom != "" {
		dst = append(append(dst, " dom="...), e.Dom...)
	}
	return dst
}

// WriteEvents writes events first..first+n-1 of o, one per line.
func WriteEvents(w io.Writer, first, n int, o EventOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	return writeOrdered(w, first, first+n-1, o.AppendEvent)
}
