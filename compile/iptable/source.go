package iptable

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/maxmind/mmdbwriter/mmdbtype"
	"go4.org/netipx"

	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/reader/mmdb"
)

// entry is one network of a source with its record.
type entry struct {
	prefix netip.Prefix
	value  mmdbtype.DataType
	line   int
	col    int // of the address field; 0 for a base layer's networks
}

// depth is the prefix length in the IPv6 tree, where IPv4 sits under ::/96.
func (e *entry) depth() int {
	if e.prefix.Addr().Is4() {
		return e.prefix.Bits() + 96
	}
	return e.prefix.Bits()
}

// compiledField is a Field or Constant placed in the profile.
type compiledField struct {
	path   []seg
	typ    Type
	col    int               // column index (fields)
	value  mmdbtype.DataType // parsed value (constants)
	source string            // as written, for messages
}

func compileConstants(o *Options, src *Source) ([]compiledField, error) {
	var out []compiledField
	seen := map[string]bool{}
	for _, c := range src.Set {
		path, typ, err := resolvePath(o, c.Path, c.Type)
		if err != nil {
			return nil, fmt.Errorf("%s: --set %s: %w", src.Path, c.Path, err)
		}
		if typ == TypeAuto {
			typ = TypeString
			if v := strings.ToLower(c.Value); v == "true" || v == "false" {
				typ = TypeBoolean
			}
		}
		v, err := parseValue(typ, c.Value)
		if err == nil {
			err = checkCoordinate(path, v)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: --set %s: %w", src.Path, c.Path, err)
		}
		key := joinPath(path)
		if seen[key] {
			return nil, fmt.Errorf("%s: %s is set twice", src.Path, c.Path)
		}
		seen[key] = true
		out = append(out, compiledField{path: path, typ: typ, value: v, source: c.Path})
	}
	return out, nil
}

// newRecord returns a record holding the constants.
func newRecord(consts []compiledField) (mmdbtype.Map, error) {
	m := mmdbtype.Map{}
	for _, c := range consts {
		if _, err := setPath(m, c.path, c.value); err != nil {
			return nil, fmt.Errorf("%s: %w", c.source, err)
		}
	}
	return m, nil
}

// readCSV reads a CSVRanges or CSVNetworks source.
func readCSV(o *Options, src *Source, emit func(entry) error) (rows int, err error) {
	r, err := source.OpenCSVRecords(src.Path, source.Options{Delimiter: src.Delimiter, Quote: src.Quote})
	if err != nil {
		return 0, err
	}
	defer r.Close()
	// The first row is a header if it names the key columns; otherwise
	// Columns names the columns of a headerless file.
	raw, err := r.Next()
	if errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("%s: empty file", src.Path)
	}
	if err != nil {
		return 0, err
	}
	first := make([]string, len(raw))
	for i, f := range raw {
		first[i] = strings.TrimSpace(strings.TrimPrefix(string(f), "\ufeff"))
	}
	keys := []string{src.NetworkColumn}
	if src.Kind == CSVRanges {
		keys = []string{src.StartColumn, src.EndColumn}
	}
	header, keep, pending := first, src.Columns, false
	if len(src.Columns) > 0 && !containsAll(first, keys) {
		header, keep, pending = src.Columns, nil, true
	}
	var rec []string
	// A key column missing from the first row tells that the file may
	// have no header row.
	col := func(name, what string, key bool) (int, error) {
		if i := slices.Index(header, name); i >= 0 {
			return i, nil
		}
		if key && len(src.Columns) == 0 {
			return 0, fmt.Errorf("%s:1: no column %q for %s in the first row, read as the header (%s): "+
				"name the columns of a file without a header row with --columns", src.Path, name, what, strings.Join(header, ", "))
		}
		return 0, fmt.Errorf("%s: no column %q for %s (columns: %s)", src.Path, name, what, strings.Join(header, ", "))
	}
	var keyCols []int
	switch src.Kind {
	case CSVRanges:
		s, err := col(src.StartColumn, "the range start", true)
		if err != nil {
			return 0, err
		}
		e, err := col(src.EndColumn, "the range end", true)
		if err != nil {
			return 0, err
		}
		keyCols = []int{s, e}
	case CSVNetworks:
		n, err := col(src.NetworkColumn, "the network", true)
		if err != nil {
			return 0, err
		}
		keyCols = []int{n}
	default:
		return 0, fmt.Errorf("%s: not a CSV source", src.Path)
	}
	fields := src.Fields
	if len(fields) == 0 {
		for i, h := range header {
			if !slices.Contains(keyCols, i) && h != "" && (keep == nil || slices.Contains(keep, h)) {
				fields = append(fields, Field{Path: h, Column: h})
			}
		}
	}
	consts, err := compileConstants(o, src)
	if err != nil {
		return 0, err
	}
	seen := map[string]string{}
	for _, c := range consts {
		seen[joinPath(c.path)] = "--set " + c.source
	}
	var cfs []compiledField
	for _, fd := range fields {
		i, err := col(fd.Column, "field "+fd.Path, false)
		if err != nil {
			return 0, err
		}
		path, typ, err := resolvePath(o, fd.Path, fd.Type)
		if err != nil {
			return 0, fmt.Errorf("%s: column %s: %w", src.Path, fd.Column, err)
		}
		if typ == TypeAuto {
			typ = TypeString
		}
		key := joinPath(path)
		if prev, dup := seen[key]; dup {
			return 0, fmt.Errorf("%s: %s is mapped twice (%s and column %s)", src.Path, key, prev, fd.Column)
		}
		seen[key] = "column " + fd.Column
		cfs = append(cfs, compiledField{path: path, typ: typ, col: i, source: fd.Path})
	}
	var pbuf []netip.Prefix
	for {
		if pending {
			pending = false // raw still holds the first record
		} else {
			raw, err = r.Next()
			if errors.Is(err, io.EOF) {
				return rows, nil
			}
			if err != nil {
				return rows, err
			}
		}
		rec = rec[:0]
		for _, f := range raw {
			rec = append(rec, string(f))
		}
		line := int(r.Line())
		rows++
		if len(rec) != len(header) {
			// At the first field too many, or where the first one
			// missing would start.
			l, c := r.EndPos()
			if len(rec) > len(header) {
				l, c = r.FieldPos(len(header))
			}
			return rows, &source.RowError{File: src.Path, Line: l, Column: c, Err: fmt.Errorf("%d fields, want %d", len(rec), len(header))}
		}
		rowErr := func(i int, err error) error {
			l, c := r.FieldPos(i)
			return &source.RowError{File: src.Path, Line: l, Column: c, Err: err}
		}
		m, err := newRecord(consts)
		if err != nil {
			return rows, &source.RowError{File: src.Path, Line: int64(line), Err: err}
		}
		for _, cf := range cfs {
			cell := rec[cf.col]
			if cell == "" {
				continue
			}
			v, err := parseValue(cf.typ, cell)
			if err == nil {
				err = checkCoordinate(cf.path, v)
			}
			if err != nil {
				return rows, rowErr(cf.col, fmt.Errorf("%s: %w", cf.source, err))
			}
			if _, err := setPath(m, cf.path, v); err != nil {
				return rows, rowErr(cf.col, err)
			}
		}
		if err := checkArrays(m, ""); err != nil {
			return rows, &source.RowError{File: src.Path, Line: int64(line), Err: err}
		}
		pbuf = pbuf[:0]
		// Where the address field starts: a quoted field before it may
		// have spanned lines.
		addrLine, addrCol := r.FieldPos(keyCols[0])
		if src.Kind == CSVRanges {
			a, b, which, err := parseRange(rec[keyCols[0]], rec[keyCols[1]], src.Family)
			if err != nil {
				return rows, rowErr(keyCols[which], err)
			}
			pbuf = netipx.IPRangeFrom(a, b).AppendPrefixes(pbuf)
		} else {
			p, err := parseNetwork(rec[keyCols[0]])
			if err != nil {
				return rows, rowErr(keyCols[0], err)
			}
			pbuf = append(pbuf, p)
		}
		for _, p := range pbuf {
			if err := emit(entry{prefix: p, value: m, line: int(addrLine), col: addrCol}); err != nil {
				return rows, err
			}
		}
	}
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// parseNetwork parses a CIDR or a single address. IPv4-mapped IPv6 forms
// become IPv4.
func parseNetwork(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not an address or CIDR network", s)
		}
		a = a.Unmap().WithZone("")
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not a CIDR network", s)
	}
	if p.Addr().Is4In6() {
		if p.Bits() < 96 {
			return netip.Prefix{}, fmt.Errorf("%q: an IPv4-mapped network needs a prefix of at least 96 bits", s)
		}
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	if p.Masked() != p {
		return netip.Prefix{}, fmt.Errorf("%q has host bits set (the network is %s)", s, p.Masked())
	}
	return p, nil
}

// parseRange parses inclusive range bounds given as addresses or decimal
// integers. which tells the failing bound (0 start, 1 end).
func parseRange(start, end string, family int) (a, b netip.Addr, which int, err error) {
	start, end = strings.TrimSpace(start), strings.TrimSpace(end)
	isInt := func(s string) bool {
		if s == "" {
			return false
		}
		for _, c := range s {
			if c < '0' || c > '9' {
				return false
			}
		}
		return true
	}
	startInt, endInt := isInt(start), isInt(end)
	if startInt && endInt {
		x, okx := new(big.Int).SetString(start, 10)
		y, oky := new(big.Int).SetString(end, 10)
		if !okx || !oky {
			return a, b, 0, fmt.Errorf("bad integer bound")
		}
		fam := family
		if fam == 0 {
			fam = 4
			if x.BitLen() > 32 || y.BitLen() > 32 {
				fam = 6
			}
		}
		if a, err = intAddr(x, fam); err != nil {
			return a, b, 0, err
		}
		if b, err = intAddr(y, fam); err != nil {
			return a, b, 1, err
		}
	} else {
		// The bound that is neither is at fault; failing that, an
		// integer beside an address.
		var errA, errB error
		a, errA = netip.ParseAddr(start)
		b, errB = netip.ParseAddr(end)
		switch {
		case errA != nil && !startInt:
			return a, b, 0, fmt.Errorf("range start %q is not an address or integer", start)
		case errB != nil && !endInt:
			return a, b, 1, fmt.Errorf("range end %q is not an address or integer", end)
		case startInt:
			return a, b, 0, fmt.Errorf("range start %s is an integer and the end %s an address: give both bounds as addresses or both as integers", start, end)
		case endInt:
			return a, b, 1, fmt.Errorf("range end %s is an integer and the start %s an address: give both bounds as addresses or both as integers", end, start)
		}
		a, b = a.Unmap().WithZone(""), b.Unmap().WithZone("")
	}
	if a.Is4() != b.Is4() {
		return a, b, 1, fmt.Errorf("range %s-%s mixes IPv4 and IPv6", a, b)
	}
	if b.Less(a) {
		return a, b, 1, fmt.Errorf("range end %s is before the start %s", b, a)
	}
	return a, b, 0, nil
}

func intAddr(x *big.Int, family int) (netip.Addr, error) {
	bits := 32
	if family == 6 {
		bits = 128
	}
	if x.BitLen() > bits {
		return netip.Addr{}, fmt.Errorf("%s does not fit an IPv%d address", x, family)
	}
	buf := make([]byte, bits/8)
	x.FillBytes(buf)
	a, _ := netip.AddrFromSlice(buf)
	return a, nil
}

// maxListLine is the longest line of a List source.
const maxListLine = 1 << 20

// readList reads a List source: one address, CIDR or start-end range per
// line; "#" and ";" start comments; what listToken finds in a line is
// used.
func readList(o *Options, src *Source, emit func(entry) error) (rows int, err error) {
	consts, err := compileConstants(o, src)
	if err != nil {
		return 0, err
	}
	if len(consts) == 0 {
		return 0, fmt.Errorf("%s: a list source needs constant fields for its records", src.Path)
	}
	f, err := source.OpenText(src.Path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	m, err := newRecord(consts)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", src.Path, err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxListLine)
	var pbuf []netip.Prefix
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if i := strings.IndexAny(text, "#;"); i >= 0 {
			text = text[:i]
		}
		tok, first := listToken(strings.TrimPrefix(text, "\ufeff"))
		if tok == "" {
			continue
		}
		rows++
		col := strings.Index(sc.Text(), first) + 1
		pbuf = pbuf[:0]
		if s, e, ok := strings.Cut(tok, "-"); ok {
			a, b, _, err := parseRange(s, e, src.Family)
			if err != nil {
				return rows, &source.RowError{File: src.Path, Line: int64(line), Column: col, Err: err}
			}
			pbuf = netipx.IPRangeFrom(a, b).AppendPrefixes(pbuf)
		} else {
			p, err := parseNetwork(tok)
			if err != nil {
				return rows, &source.RowError{File: src.Path, Line: int64(line), Column: col, Err: err}
			}
			pbuf = append(pbuf, p)
		}
		for _, p := range pbuf {
			if err := emit(entry{prefix: p, value: m, line: line, col: col}); err != nil {
				return rows, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return rows, &source.RowError{File: src.Path, Line: int64(line + 1), Final: true, Err: fmt.Errorf(
				"a line longer than %d MiB: a list holds one address, CIDR or range per line (is this the right file?)", maxListLine>>20)}
		}
		return rows, fmt.Errorf("%s:%d: %w", src.Path, line+1, err)
	}
	return rows, nil
}

// listToken returns what a list line holds: its first token, ended by a
// space, a tab or a comma, or a range written with spaces around its dash
// ("10.0.0.1 - 10.0.0.9") when the word after the dash is an address or
// an integer (otherwise, as in "10.0.0.1 - edge router", the words after
// the first are a comment). first is the line's first token.
func listToken(text string) (tok, first string) {
	word := func(s string) (string, string) {
		s = strings.TrimLeft(s, " \t")
		if i := strings.IndexAny(s, " \t,"); i >= 0 {
			return s[:i], s[i:]
		}
		return s, ""
	}
	first, rest := word(text)
	if first == "" || strings.HasPrefix(rest, ",") {
		return first, first
	}
	start := first
	var end string
	switch rest = strings.TrimLeft(rest, " \t"); {
	case strings.HasSuffix(first, "-") && strings.Count(first, "-") == 1:
		start = strings.TrimSuffix(first, "-")
		end, _ = word(rest)
	case strings.HasPrefix(rest, "-") && !strings.Contains(first, "-"):
		end, _ = word(rest[1:])
	default:
		return first, first
	}
	if _, err := netip.ParseAddr(end); err != nil && !isDecimal(end) {
		return first, first
	}
	return start + "-" + end, first
}

// isDecimal reports whether s is a non-empty run of decimal digits.
func isDecimal(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// readBase reads every network of an existing MMDB (aliases excluded).
func readBase(src *Source, emit func(entry) error) (rows int, meta mmdb.Metadata, err error) {
	// Verified first: iterating the networks of a corrupt tree could run
	// for ever.
	r, err := mmdb.Open(src.Path, mmdb.WithVerify())
	if err != nil {
		return 0, meta, err
	}
	defer r.Close()
	meta = r.Metadata()
	cache := map[uintptr]mmdbtype.DataType{}
	u := newUnmarshaler()
	for res := range r.DB().Networks() {
		if err := res.Err(); err != nil {
			return rows, meta, fmt.Errorf("%s: %w", src.Path, err)
		}
		rows++
		v, ok := cache[res.Offset()]
		if !ok {
			u.Clear()
			if err := res.Decode(u); err != nil {
				return rows, meta, fmt.Errorf("%s: record of %s: %w", src.Path, res.Prefix(), err)
			}
			v = u.Result()
			cache[res.Offset()] = v
		}
		p := res.Prefix()
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		if err := emit(entry{prefix: p, value: v, line: rows}); err != nil {
			return rows, meta, err
		}
	}
	return rows, meta, nil
}

// rowError places err, an error of the data at e, at e's row and
// address column (a *source.RowError), or at a base layer's network.
func rowError(src *Source, e *entry, err error) error {
	if src.Kind == Base {
		return fmt.Errorf("%s: %w", describe(src, e.line), err)
	}
	return &source.RowError{File: src.Path, Line: int64(e.line), Column: e.col, Err: err}
}

// describe names a source line for error messages.
func describe(src *Source, line int) string {
	if src.Kind == Base {
		return src.Path + ": network " + strconv.Itoa(line)
	}
	return src.Path + ":" + strconv.Itoa(line)
}

// describeCol names a source line and column (when known) for messages.
func describeCol(src *Source, line, col int) string {
	if src.Kind == Base || col <= 0 {
		return describe(src, line)
	}
	return describe(src, line) + ":" + strconv.Itoa(col)
}
