package parse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
)

// frameAll reads every message; truncated ones are suffixed "|T".
func frameAll(r io.Reader, max int) ([]string, error) {
	fr := NewFramer(r, max)
	var out []string
	for {
		msg, trunc, err := fr.Next()
		if err != nil {
			// The error is sticky.
			if _, _, err2 := fr.Next(); err2 == nil {
				return out, fmt.Errorf("error not sticky: %w, then none", err)
			} else if !errors.Is(err2, err) {
				return out, fmt.Errorf("error not sticky: %w, then %w", err, err2)
			}
			return out, err
		}
		s := string(msg)
		if trunc {
			s += "|T"
		}
		out = append(out, s)
	}
}

func TestFramer(t *testing.T) {
	f := func(in string, max int, want []string, wantErr error) {
		t.Helper()
		readers := map[string]func() io.Reader{
			"whole":   func() io.Reader { return strings.NewReader(in) },
			"onebyte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(in)) },
			"dataerr": func() io.Reader { return iotest.DataErrReader(strings.NewReader(in)) },
			"half":    func() io.Reader { return iotest.HalfReader(strings.NewReader(in)) },
		}
		for name, mk := range readers {
			got, err := frameAll(mk(), max)
			if !errors.Is(err, wantErr) {
				t.Errorf("%s %q max %d: err = %v, want %v", name, in, max, err, wantErr)
			}
			if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
				t.Errorf("%s %q max %d:\n got %q\nwant %q", name, in, max, got, want)
			}
		}
	}
	EOF, UEOF := io.EOF, io.ErrUnexpectedEOF
	var none []string

	f("", 10, none, EOF)
	// Newline framing.
	f("a\nb\r\nc\n", 10, []string{"a", "b", "c"}, EOF)
	f("\n\r\na\n\n", 10, []string{"a"}, EOF)
	f("a\nb", 10, []string{"a", "b"}, EOF)
	f("a\r", 10, []string{"a"}, EOF)
	f("\r", 10, none, EOF)
	f("abc\nabcdef", 5, []string{"abc", "abcde|T"}, EOF)
	f("a\r\rb\n", 10, []string{"a\r\rb"}, EOF)
	f("abcdefghij\nabc\n", 5, []string{"abcde|T", "abc"}, EOF)
	f("abcde\r\n", 5, []string{"abcde"}, EOF)
	f("abcde\n", 5, []string{"abcde"}, EOF)
	f("abcdef\n", 5, []string{"abcde|T"}, EOF)
	f("abcdef\r\n", 5, []string{"abcde|T"}, EOF)
	f("abcdefg\nx\n", 5, []string{"abcde|T", "x"}, EOF)
	f("abcdefghij", 5, []string{"abcde|T"}, EOF)
	f(strings.Repeat("x", 10000)+"\nok\n", 100, []string{strings.Repeat("x", 100) + "|T", "ok"}, EOF)
	f("<13>x 1\n", 10, []string{"<13>x 1"}, EOF)
	// NUL ends a line as '\n' does (RFC 6587 3.4.2; Python's
	// SysLogHandler sends no '\n').
	f("<14>a\x00<14>b\x00", 10, []string{"<14>a", "<14>b"}, EOF)
	f("a\x00\nb\r\x00\x00c\n\x00", 10, []string{"a", "b", "c"}, EOF)
	f("abcdefgh\x00x\x00", 5, []string{"abcde|T", "x"}, EOF)
	f("abcde\r\x00abcdef\x00", 5, []string{"abcde", "abcde|T"}, EOF)

	// Octet counting.
	f("3 abc5 hello", 10, []string{"abc", "hello"}, EOF)
	f("3 abc\n5 hello\r\n", 10, []string{"abc", "hello"}, EOF)
	f("4 abc\n5 abc\r\n", 10, []string{"abc", "abc"}, EOF)
	f("5 hello3 abc", 3, []string{"hel|T", "abc"}, EOF)
	f("12 hello world!1 x", 5, []string{"hello|T", "x"}, EOF)
	f("10 "+strings.Repeat("y", 10), 10, []string{strings.Repeat("y", 10)}, EOF)
	// A frame of max bytes and its line end is whole, as a line is.
	f("6 abcde\n7 abcde\r\n1 x", 5, []string{"abcde", "abcde", "x"}, EOF)
	f("6 abcdef7 abcdef\n8 abcdefgh1 x", 5, []string{"abcde|T", "abcde|T", "abcde|T", "x"}, EOF)
	f("5 hel", 10, none, UEOF)
	f("3 abc5", 10, []string{"abc"}, UEOF)
	f("3 abc12", 10, []string{"abc"}, UEOF)
	f("3 abc9 ", 10, []string{"abc"}, UEOF)
	f("9 abc", 3, []string{"abc|T"}, UEOF)
	f("9 ab", 3, none, UEOF)
	f("9 abcde", 3, []string{"abc|T"}, UEOF)
	f("3 abcx 1", 10, []string{"abc"}, ErrOctetCount)
	f("3 abc03 abc", 10, []string{"abc"}, ErrOctetCount)
	f("3x abc", 10, none, ErrOctetCount)
	f("3 abc 3 abc", 10, []string{"abc"}, ErrOctetCount)
	f("1234567890 x", 10, none, ErrOctetCount)
	f("999999999 x", 10, none, UEOF)
	f("999999999 abcdefghijk", 10, []string{"abcdefghij|T"}, UEOF)

	// logger(1) from bsdutils, one connection per invocation.
	f("<156>Nov 30 06:16:21 vm myapp: hello world 3164\n", 2048,
		[]string{"<156>Nov 30 06:16:21 vm myapp: hello world 3164"}, EOF)
	f("53 <156>Nov 30 06:16:21 vm myapp[3480]: hello octet 3164", 2048,
		[]string{"<156>Nov 30 06:16:21 vm myapp[3480]: hello octet 3164"}, EOF)
	f("111 <13>1 2026-11-30T06:16:21.655003+00:00 vm myapp - - [timeQuality tzKnown=\"1\" isSynced=\"0\"] octet 5424 \xc3\xbcn\xc3\xafcode", 2048,
		[]string{"<13>1 2026-11-30T06:16:21.655003+00:00 vm myapp - - [timeQuality tzKnown=\"1\" isSynced=\"0\"] octet 5424 \xc3\xbcn\xc3\xafcode"}, EOF)
}

// TestLineFramer: a line framer takes a leading digit as the start of a
// line, and frames as the newline mode does.
func TestLineFramer(t *testing.T) {
	fr := NewLineFramer(strings.NewReader("3 abc\n\r\n12345678\n{\"a\":1}"), 5)
	var got []string
	for {
		msg, trunc, err := fr.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
		s := string(msg)
		if trunc {
			s += "|T"
		}
		got = append(got, s)
	}
	if want := []string{"3 abc", "12345|T", `{"a":|T`}; fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestLineFramerCut: a line framer and a syslog Framer in newline mode
// deliver a line a read error cut (the drain's deadline), then the error;
// an octet-counted frame the error cuts is not delivered, and Cut says so.
func TestLineFramerCut(t *testing.T) {
	errCut := errors.New("cut")
	r := func(s string) io.Reader { return io.MultiReader(strings.NewReader(s), iotest.ErrReader(errCut)) }
	for name, fr := range map[string]*Framer{"line framer": NewLineFramer(r("a\nbc"), 10), "framer": NewFramer(r("a\nbc"), 10)} {
		for _, want := range []string{"a", "bc"} {
			if msg, _, err := fr.Next(); err != nil || string(msg) != want {
				t.Fatalf("%s: %q, %v; want %q", name, msg, err, want)
			}
		}
		if _, _, err := fr.Next(); !errors.Is(err, errCut) || fr.Cut() {
			t.Fatalf("%s after the cut line: %v, cut %v; want %v, not cut", name, err, fr.Cut(), errCut)
		}
	}
	for in, cut := range map[string]bool{"1 a": false, "1 a2": true, "1 a3 bc": true, "1 a9 ": true} {
		fr := NewFramer(r(in), 10)
		if msg, _, err := fr.Next(); err != nil || string(msg) != "a" || fr.Cut() {
			t.Fatalf("octet framer %q: %q, %v, cut %v; want \"a\"", in, msg, err, fr.Cut())
		}
		if msg, _, err := fr.Next(); !errors.Is(err, errCut) || fr.Cut() != cut {
			t.Errorf("octet framer %q after \"a\": %q, %v, cut %v; want %v, cut %v", in, msg, err, fr.Cut(), errCut, cut)
		}
	}
	// The rest of an oversize frame, its message delivered truncated.
	fr := NewFramer(r("20 abcdefghijkl"), 5)
	if msg, trunc, err := fr.Next(); err != nil || string(msg) != "abcde" || !trunc {
		t.Fatalf("oversize frame: %q, %v, %v", msg, trunc, err)
	}
	if _, _, err := fr.Next(); !errors.Is(err, errCut) || fr.Cut() {
		t.Errorf("after the oversize frame: %v, cut %v; want %v, not cut", err, fr.Cut(), errCut)
	}
}

// TestFramerStream pushes many random messages through both framings with
// several reader behaviours and a small buffer so that frames straddle
// buffer refills.
func TestFramerStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const max = 5000 // buffer is max+64: messages straddle refills
	var msgs []string
	for i := 0; i < 3000; i++ {
		n := 1 + rng.IntN(max+200)
		if i%3 != 0 {
			n = 1 + rng.IntN(300)
		}
		b := make([]byte, n)
		for j := range b {
			b[j] = byte('a' + rng.IntN(26))
		}
		msgs = append(msgs, string(b))
	}
	var nl, oc bytes.Buffer
	want := make([]string, len(msgs))
	for i, m := range msgs {
		nl.WriteString(m)
		nl.WriteString("\n")
		fmt.Fprintf(&oc, "%d %s", len(m), m)
		want[i] = m
		if len(m) > max {
			want[i] = m[:max] + "|T"
		}
	}
	for _, in := range []*bytes.Buffer{&nl, &oc} {
		for name, r := range map[string]io.Reader{
			"whole":   bytes.NewReader(in.Bytes()),
			"onebyte": iotest.OneByteReader(bytes.NewReader(in.Bytes())),
			"half":    iotest.HalfReader(bytes.NewReader(in.Bytes())),
		} {
			got, err := frameAll(r, max)
			if !errors.Is(err, io.EOF) {
				t.Fatalf("%s: %v", name, err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d messages, want %d", name, len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%s: message %d differs (len %d, want %d)", name, i, len(got[i]), len(want[i]))
				}
			}
		}
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

func TestFramerErrors(t *testing.T) {
	boom := errors.New("boom")
	fr := NewFramer(io.MultiReader(strings.NewReader("a\nb"), errReader{boom}), 10)
	for _, want := range []string{"a", "b"} { // the line the error cut too
		if msg, _, err := fr.Next(); err != nil || string(msg) != want {
			t.Fatalf("got %q, %v; want %q", msg, err, want)
		}
	}
	if _, _, err := fr.Next(); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	fr.Reset(zeroReader{})
	if _, _, err := fr.Next(); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("err = %v, want io.ErrNoProgress", err)
	}
	fr.Reset(strings.NewReader("2 ok"))
	if msg, _, err := fr.Next(); err != nil || string(msg) != "ok" || !fr.Octet() {
		t.Fatalf("after Reset: %q, %v, octet=%v", msg, err, fr.Octet())
	}
	fr.Reset(strings.NewReader("x 1"))
	if msg, _, err := fr.Next(); err != nil || string(msg) != "x 1" || fr.Octet() {
		t.Fatalf("after Reset to newline: %q, %v", msg, err)
	}
	if _, _, err := fr.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the unterminated last line: %v, want io.EOF", err)
	}
	fr.Reset(strings.NewReader("1x"))
	if _, _, err := fr.Next(); !errors.Is(err, ErrOctetCount) {
		t.Fatalf("err = %v", err)
	} else {
		t.Logf("malformed count error: %v", err)
	}
}

// oneMessageReader gives one message a Read, as a sender writing now and
// then does.
type oneMessageReader struct{ left int }

func (r *oneMessageReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	r.left--
	return copy(p, "<13>1 2024-01-01T00:00:00Z h app - - - short\n"), nil
}

// TestFramerReadAhead: a stream whose reads fill the buffer (a busy
// sender) is read with a buffer grown to 64 KiB, not 4 KiB at a time; one
// that gives a short message a read keeps 4 KiB; a maximum under 64 KiB
// bounds the growth.
func TestFramerReadAhead(t *testing.T) {
	var busy []byte
	for i := range 20000 {
		busy = fmt.Appendf(busy, "<13>1 2024-01-01T00:00:00Z h app - - - event %d\n", i)
	}
	for _, tc := range []struct {
		name string
		r    io.Reader
		max  int
		want int
	}{
		{"busy", bytes.NewReader(busy), 64 << 10, readAhead},
		{"busy, small maximum", bytes.NewReader(busy), 10000, 10000 + 64},
		{"now and then", &oneMessageReader{left: 20000}, 64 << 10, minFramerBuf},
	} {
		f := NewFramer(tc.r, tc.max)
		n := 0
		for {
			_, _, err := f.Next()
			if errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			n++
		}
		if n != 20000 {
			t.Fatalf("%s: %d messages, want 20000", tc.name, n)
		}
		if len(f.buf) != tc.want {
			t.Errorf("%s: read buffer of %d bytes at the end, want %d", tc.name, len(f.buf), tc.want)
		}
	}
}
