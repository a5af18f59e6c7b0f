package memcached

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"
)

// exchangeText sends request on a new connection and returns the answers
// up to and including the "MN" of an "mn" it appends.
func exchangeText(t testing.TB, addr, request string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	// Written while the answers are read: a large request is more than a
	// socket buffers while no one reads.
	wrote := make(chan error, 1)
	go func() {
		_, err := c.Write([]byte(request + "mn\r\n"))
		wrote <- err
	}()
	var got bytes.Buffer
	r := bufio.NewReader(c)
	for {
		l, err := r.ReadString('\n')
		got.WriteString(l)
		if l == "MN\r\n" {
			if err := <-wrote; err != nil {
				t.Fatalf("%s: writing the request: %v", addr, err)
			}
			return got.String()
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				t.Fatalf("%s closed the connection after %.300q", addr, got.String())
			}
			t.Fatalf("%s: %v after %.300q", addr, err, got.String())
		}
	}
}

// casToken matches the cas unique of a VALUE line of gets and the c flag
// of an mg answer.
var casToken = regexp.MustCompile(`(?m)^((?:VALUE \S+ \d+ \d+ )|(?:(?:VA \d+|HD)(?: \S+)*? c))(\d+)`)

// maskTextCAS replaces the cas uniques of hits: memcached's is the
// version it gave the item when it was stored, enrichd's the generation of
// its table set; both must be there, their values legitimately differ.
func maskTextCAS(s string) string { return casToken.ReplaceAllString(s, "${1}CAS") }

// TestMetaLikeMemcached is the byte-for-byte comparison of the meta
// commands: the same mg and mn commands sent to enrichd and to a real
// memcached holding the same items get the same bytes back, cas values
// masked (maskTextCAS).
func TestMetaLikeMemcached(t *testing.T) {
	ours := startEnrichd(t, enrichdOpts{})
	real := startMemcached(t)
	mirror(t, ours, real, "customers:42", "customers:7", "customers:9000")
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, cmd := range []string{
		// As Dalli 3.2+'s meta protocol asks: get, get_multi (quiet, with
		// the key and size, ended by mn), get_cas.
		"mg customers:42 v f",
		"mg customers:42 v f k q s\r\nmg customers:nope v f k q s\r\nmg customers:7 v f k q s",
		"mg customers:42 v f c",
		"mg " + b64("customers:42") + " v f b",
		"mg " + b64("customers:42") + " v f k q s b\r\nmg " + b64("customers:nope") + " v f k q s b",
		// Every flag the listener serves, in several orders.
		"mg customers:9000 v k c f s t O123",
		"mg customers:7 O9 t s f c k v",
		"mg customers:42 k",
		"mg customers:42",
		"mg customers:42 q",
		"mg customers:42 v u R30 P/x Lx F1 C1 MS J1 D1 I",
		"mg customers:nope v k O9",
		"mg customers:nope v k O9 q",
		"mg customers:nope",
		"mg " + b64("customers:nope") + " b k O1",
		"mg customers:42 v\tk",
		"mg  customers:42   v  k ",
		// Errors.
		"mg",
		"mg " + strings.Repeat("k", 251) + " v",
		"mg customers:42 v v",
		"mg customers:42 z",
		"mg customers:42 O" + strings.Repeat("x", 32),
		"mg customers:nope q O" + strings.Repeat("x", 40),
		"mg !!! b",
		"mg Y3VzdG9tZXJzOjQy b",
		"mg customers:42 Tx",
		"mg customers:42 Fx",
		"mg customers:42 Mxx",
		"mg customers:42 Jx Dx",
		"mg customers:42 " + strings.Repeat("a ", 17) + "v",
		"mg customers:42 \x80",
		"mz customers:42",
		"m",
	} {
		a := exchangeText(t, ours, cmd+"\r\n")
		b := exchangeText(t, real, cmd+"\r\n")
		if maskTextCAS(a) != maskTextCAS(b) {
			t.Errorf("%.60q:\nenrichd   %.300q\nmemcached %.300q", cmd, a, b)
		}
	}
}

// TestTextLikeMemcached is the byte-for-byte comparison of the text
// protocol: reads, and the writes whose answer a real memcached gives
// without changing what the reads see: every write with noreply (memcached
// stores it and answers nothing; enrichd refuses it and answers nothing),
// and malformed writes. A get after each shows that both are in step.
func TestTextLikeMemcached(t *testing.T) {
	ours := startEnrichd(t, enrichdOpts{})
	real := startMemcached(t)
	mirror(t, ours, real, "customers:42", "customers:7", "customers:9000")
	const get = "get customers:42\r\n"
	for _, cmd := range []string{
		"get customers:42 customers:nope customers:9000\r\n",
		"gets customers:42 customers:7\r\n",
		"bget customers:7\r\n",
		"get a\x01b customers:7\r\n",
		"get " + strings.Repeat("k", 251) + "\r\n",
		"get\r\n",
		"gets\r\n",
		"\r\n",
		"bogus\r\n",
		"x\r\n",
		"stats nonesuch\r\n",
		// noreply writes to other keys: nothing comes back.
		"set w:1 0 0 5 noreply\r\nhello\r\n",
		"add w:2 0 0 5 noreply\r\nhello\r\n",
		"replace w:1 0 0 5 noreply\r\nhello\r\n",
		"append w:1 0 0 5 noreply\r\nhello\r\n",
		"prepend w:1 0 0 5 noreply\r\nhello\r\n",
		"cas w:1 0 0 5 1 noreply\r\nhello\r\n",
		"set w:3 7 100 100000 noreply\r\n" + strings.Repeat("x", 100000) + "\r\n",
		"delete w:2 noreply\r\n",
		"delete w:3 0 noreply\r\n",
		"incr w:1 1 noreply\r\n",
		"decr w:1 1 noreply\r\n",
		"touch w:1 10 noreply\r\n",
		"flush_all 86400 noreply\r\n",
		"verbosity 0 noreply\r\n",
		"verbosity 0\r\n",
		// Malformed writes: the same error, or nothing with noreply.
		"set customers:42 0 0 x\r\n",
		"set customers:42 0 0 x noreply\r\n",
		"set customers:42 0 0 -1\r\n",
		"set " + strings.Repeat("k", 251) + " 0 0 1\r\n",
		"set customers:42 0 0 2\r\nhix\r\n",
		"set customers:42 0 0 2 noreply\r\nhix\r\n",
		"set customers:42 0 0\r\n",
		"set customers:42 0 0 1 noreply x\r\n",
		"cas customers:42 0 0 1\r\n",
		"cas customers:42 0 0 1 x\r\n",
		"delete\r\n",
		"delete customers:42 5\r\n",
		"delete customers:42 5 noreply\r\n",
		"delete " + strings.Repeat("k", 251) + "\r\n",
		"incr customers:42\r\n",
		"incr customers:42 x\r\n",
		"decr customers:42 x noreply\r\n",
		"touch customers:42 x\r\n",
		"touch customers:42 x noreply\r\n",
		"flush_all x\r\n",
		"flush_all 1 noreply x\r\n",
		"gats x customers:42\r\n",
		"gat\r\n",
		"ms customers:42\r\n",
		"ms customers:42 x\r\n",
		"ms customers:42 2\r\nhix\r\n",
		"md\r\n",
		"ma\r\n",
		"ms\r\n",
	} {
		a := exchangeText(t, ours, cmd+get)
		b := exchangeText(t, real, cmd+get)
		if maskTextCAS(a) != maskTextCAS(b) {
			t.Errorf("%.60q:\nenrichd   %.300q\nmemcached %.300q", cmd, a, b)
		}
		if !strings.HasSuffix(a, "END\r\nMN\r\n") {
			t.Errorf("%.60q: the get after it is not answered: %.300q", cmd, a)
		}
	}
	// version: the same form, a memcached version number first.
	a, b := exchangeText(t, ours, "version\r\n"), exchangeText(t, real, "version\r\n")
	re := regexp.MustCompile(`^VERSION [1-9][0-9]*\.[0-9]+\.[0-9]+(-[a-z0-9.-]+)?\r\nMN\r\n$`)
	if a != "VERSION "+wantVersion+"\r\nMN\r\n" || !re.MatchString(a) || !re.MatchString(b) {
		t.Errorf("version: enrichd %q, memcached %q", a, b)
	}
}
