package enrichd

import (
	"errors"
	"net"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lutkit/lutkit/internal/config"
)

func init() {
	RegisterInput(InputKind{Type: "udp", Endpoint: EndpointListen, Network: "udp", Format: FormatSyslog,
		Settings: func() Settings { return &UDPInputConfig{} }, New: newUDPInput})
}

// UDPInputConfig are the settings of a udp input.
type UDPInputConfig struct {
	ReadBuffer int // SO_RCVBUF
}

// Keys are the udp input's keys.
func (c *UDPInputConfig) Keys(d *config.Decoder, field string) config.Keys {
	return config.Keys{
		"read_buffer": func(v *yaml.Node) { c.ReadBuffer, _ = d.DefaultedSize(v, config.Field(field, "read_buffer")) },
	}
}

// SetDefaults fills the unset settings.
func (c *UDPInputConfig) SetDefaults() {
	if c.ReadBuffer == 0 {
		c.ReadBuffer = DefaultUDPReadBuffer
	}
}

// Validate checks the settings.
func (c *UDPInputConfig) Validate(s config.Scope) {
	if c.ReadBuffer < 0 {
		s.Errorf("read_buffer", "must be a positive integer, not %d", c.ReadBuffer)
	}
}

// udpInput reads one message per datagram. It never waits for the
// workers: when no batch is free or the queue is full, it drops and
// counts (InputStats.Dropped, reason "queue_full"). The datagrams the
// kernel drops, its receive buffer full, are counted by the kernel for
// the socket; the input exports that count (reason "kernel").
type udpInput struct {
	cfg   *InputConfig
	env   *Env
	conn  *net.UDPConn
	stats *InputStats
	stopState
	done  chan struct{}
	kdrop kernelDrops
}

// kernelDrops follows the kernel's drop counter of a socket: a 32-bit
// count that wraps, read at each scrape and once more when the input
// stops reading, and kept after the socket is closed.
type kernelDrops struct {
	mu    sync.Mutex
	last  uint32
	total uint64
}

// sample reads the socket's counter and returns the drops so far.
func (k *kernelDrops) sample(c *net.UDPConn) uint64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	if n, ok := socketDrops(c); ok {
		k.total += uint64(n - k.last)
		k.last = n
	}
	return k.total
}

func newUDPInput(ic *InputConfig, env *Env) (Input, error) {
	ua, err := net.ResolveUDPAddr("udp", ic.Listen)
	if err != nil {
		return nil, err
	}
	c, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, err
	}
	asked := ic.Settings.(*UDPInputConfig).ReadBuffer
	if got, err := setReadBuffer(c, asked); err != nil {
		env.Log.Warn("udp: the socket keeps its default read buffer", "listen", ic.Listen, "err", err)
	} else if got < asked {
		env.Log.Warn("udp: the kernel capped read_buffer (net.core.rmem_max): raise that sysctl, or give enrichd CAP_NET_ADMIN (SO_RCVBUFFORCE)",
			"input", ic.Name, "listen", ic.Listen, "read_buffer", asked, "obtained", got)
	}
	return &udpInput{cfg: ic, env: env, conn: c, stats: env.InputStats(), done: make(chan struct{})}, nil
}

// Collect exports the datagrams the kernel dropped.
func (u *udpInput) Collect(m MetricSink) {
	m.Counter(mDropped, u.kdrop.sample(u.conn), u.stats.Name, u.stats.Type, dropKernel)
}

func (u *udpInput) Start()                { go u.serve() }
func (u *udpInput) Done() <-chan struct{} { return u.done }
func (u *udpInput) Addr() net.Addr        { return u.conn.LocalAddr() }
func (u *udpInput) Stats() *InputStats    { return u.stats }
func (u *udpInput) Close() error          { return u.conn.Close() }

// Stop gives serve until deadline to read what the socket holds. A socket
// that refuses the deadline is closed, and serve ends on its own.
func (u *udpInput) Stop(deadline time.Time) {
	u.stop(deadline)
	_ = u.conn.SetReadDeadline(deadline)
}

// maxDatagram is more than the largest UDP payload (65,507 bytes over
// IPv4, 65,527 over IPv6): a buffer this long holds any datagram whole.
const maxDatagram = 1 << 16

func (u *udpInput) serve() {
	defer close(u.done)
	bt := u.env.Batcher(u.stats, u.cfg.Format, true)
	// Room for the largest datagram: a message of max_message_size with
	// a line end or NUL after it is whole, and only one longer once
	// those are cut off is truncated.
	buf := make([]byte, max(u.cfg.MaxMessageSize+1, maxDatagram))
	for {
		var deadline time.Time // none: wait for the next datagram
		switch {
		case u.isStopping():
			deadline = u.drainDeadline()
		case bt.Pending():
			if !time.Now().Before(bt.Due()) {
				bt.Flush()
			}
			deadline = time.Now().Add(bt.FlushInterval())
		}
		if err := u.conn.SetReadDeadline(deadline); err != nil {
			break // only a closed socket refuses a deadline
		}
		n, _, err := u.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if isTimeout(err) && !u.isStopping() {
				bt.Flush()
				continue
			}
			if u.isStopping() || errors.Is(err, net.ErrClosed) {
				break
			}
			u.stats.FrameErrors.Add(1)
			continue
		}
		msg := buf[:n]
		for len(msg) > 0 && (msg[len(msg)-1] == '\n' || msg[len(msg)-1] == '\r' || msg[len(msg)-1] == 0) {
			msg = msg[:len(msg)-1]
		}
		trunc := false
		if len(msg) > u.cfg.MaxMessageSize {
			msg, trunc = msg[:u.cfg.MaxMessageSize], true
		}
		if len(msg) == 0 {
			continue
		}
		bt.Add(msg, trunc)
	}
	bt.Flush()
	u.kdrop.sample(u.conn) // the last count, before Close
}
