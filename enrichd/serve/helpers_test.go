package serve

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/internal/testfiles"
	"github.com/lutkit/lutkit/tables"
)

// custSource yields n customers: key i, name "Name i", email
// "u<i>@example.com", note with characters JSON must escape.
type custSource struct {
	n, i   int
	fields [][]byte
	buf    []byte
}

func (g *custSource) Columns() []string { return []string{"id", "name", "email", "note"} }
func (g *custSource) Line() int64       { return int64(g.i) + 1 }
func (g *custSource) Close() error      { return nil }
func (g *custSource) Next() ([][]byte, error) {
	if g.i >= g.n {
		return nil, io.EOF
	}
	b := strconv.AppendInt(g.buf[:0], int64(g.i), 10)
	k := len(b)
	b = append(b, "Name "...)
	b = strconv.AppendInt(b, int64(g.i), 10)
	nm := len(b)
	b = append(b, 'u')
	b = strconv.AppendInt(b, int64(g.i), 10)
	b = append(b, "@example.com"...)
	em := len(b)
	b = append(b, "say \"hi\"\\ é"...)
	g.buf = b
	if g.fields == nil {
		g.fields = make([][]byte, 4)
	}
	g.fields[0], g.fields[1], g.fields[2], g.fields[3] = b[:k], b[k:nm], b[nm:em], b[em:]
	g.i++
	return g.fields, nil
}

// pairSource yields a composite-key table: (region, id) -> owner.
type pairSource struct{ i int }

func (g *pairSource) Columns() []string { return []string{"region", "id", "owner"} }
func (g *pairSource) Line() int64       { return int64(g.i) + 1 }
func (g *pairSource) Close() error      { return nil }
func (g *pairSource) Next() ([][]byte, error) {
	rows := [][]string{{"eu", "1", "alice"}, {"us", "1", "bob"}, {"eu", "2", "carol"}}
	if g.i >= len(rows) {
		return nil, io.EOF
	}
	r := rows[g.i]
	g.i++
	return [][]byte{[]byte(r[0]), []byte(r[1]), []byte(r[2])}, nil
}

// testSet builds customers (n rows) and pairs (composite) in a temporary
// directory, links the real city MMDB as "geo", and opens the set.
func testSet(t testing.TB, n int) *tables.Set {
	t.Helper()
	dir := t.TempDir()
	if _, err := compile.File(&custSource{n: n}, filepath.Join(dir, "customers.lut"), compile.Options{Key: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := compile.File(&pairSource{}, filepath.Join(dir, "pairs.lut"), compile.Options{Key: []string{"region", "id"}}); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(testfiles.CityMMDB(t), filepath.Join(dir, "geo.mmdb")); err != nil {
		t.Fatal(err)
	}
	set, err := tables.Open(dir, tables.Options{DataVerify: tables.DataVerifyNone, NoWatch: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	return set
}
