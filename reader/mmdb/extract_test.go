package mmdb

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// extractPaths are the path sets extract is checked with: GeoIP2 and
// flat city records, every type of the MaxMind test decoder file, and
// paths into arrays.
var extractPaths = [][]string{
	{"city.names.en", "subdivisions.-1.iso_code", "location.latitude", "country.iso_code", "a.0.b"},
	{"country_code", "city", "latitude", "longitude"},
	{"utf8_string", "double", "float", "int32", "uint16", "uint32", "uint64", "uint128", "boolean", "bytes",
		"map.mapX.arrayX.0", "map.mapX.utf8_stringX", "array.-1", "array"},
	{"autonomous_system_number", "autonomous_system_organization", "ip", "is_anonymous"},
}

func compiledExtractPaths(tb testing.TB) []*Fields {
	tb.Helper()
	var fs []*Fields
	for _, p := range extractPaths {
		f, err := CompileFields(p...)
		if err != nil {
			tb.Fatal(err)
		}
		fs = append(fs, f)
	}
	return fs
}

// checkExtract compares extract with extractRef at off.
func checkExtract(t *testing.T, s section, off uint, f *Fields) {
	t.Helper()
	got := make([]Value, f.Len())
	want := make([]Value, f.Len())
	gerr := s.extract(off, &f.root, got, 0)
	werr := s.extractRef(off, &f.root, want, 0)
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("offset %d, %q: error %v, reference %v", off, f.paths, gerr, werr)
	}
	if gerr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("offset %d, %q: values %v, reference %v", off, f.paths, got, want)
	}
}

// TestExtractMatchesReference: extract gives the reference's values and
// errors for every record of every test file and the city file.
func TestExtractMatchesReference(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testfiles.MaxMind(t, "test-data"), "*.mmdb"))
	files = append(files, testfiles.CityMMDB(t))
	fs := compiledExtractPaths(t)
	records := 0
	for _, file := range files {
		r, err := Open(file)
		if err != nil {
			continue
		}
		seen := map[uintptr]bool{}
		for res := range r.DB().Networks() {
			if res.Err() != nil || len(seen) >= 20000 {
				break
			}
			off := res.Offset()
			if seen[off] {
				continue
			}
			seen[off] = true
			for _, f := range fs {
				checkExtract(t, r.data, uint(off), f)
			}
		}
		records += len(seen)
		r.Close()
	}
	if records == 0 {
		t.Fatal("no records")
	}
}

// FuzzExtract: on any bytes, extract gives the reference's values and
// errors, and does not panic.
func FuzzExtract(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(testfiles.MaxMind(f, "test-data"), "*.mmdb"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil || len(b) > 1<<14 {
			continue
		}
		r, err := OpenBytes(b)
		if err != nil {
			continue
		}
		for res := range r.DB().Networks() {
			if res.Err() == nil {
				f.Add([]byte(r.data), uint16(res.Offset()), uint8(0))
			}
			break
		}
		r.Close()
	}
	// A map of a pointer key, a float, a pointer to a pointer.
	f.Add([]byte("\xe2\x44city\x20\x00\x04\x08\x3f\x80\x00\x00\x20\x0b\x20\x00"), uint16(0), uint8(0))
	f.Add([]byte("\xe1\x20\x04\x44city\x44Rome"), uint16(0), uint8(1))
	fs := compiledExtractPaths(f)
	f.Fuzz(func(t *testing.T, data []byte, off uint16, sel uint8) {
		checkExtract(t, section(data), uint(off), fs[int(sel)%len(fs)])
	})
}

// extractRef is extract as it was before its fast paths: the reference the
// fuzz target compares extract with. It walks the value at off and fills the slots of n and its children.
func (s section) extractRef(off uint, n *fieldNode, out []Value, depth int) error {
	if depth > maxDepth {
		return errDepth
	}
	kind, size, data, err := s.ctrl(off)
	if err != nil {
		return err
	}
	if kind == KindPointer {
		kind, size, data, err = s.ctrl(size)
		if err != nil {
			return err
		}
		if kind == KindPointer {
			return corrupt(off, "pointer to a pointer")
		}
	}
	if n.slot >= 0 && n.slot < len(out) {
		v := &out[n.slot]
		v.kind = kind
		switch kind {
		case KindString, KindBytes:
			v.b = s[data : data+size : data+size]
		case KindDouble, KindFloat, KindUint16, KindUint32, KindUint64, KindInt32:
			v.u = s.uint(data, size)
		case KindUint128:
			v.hi, v.u = s.uint128(data, size)
		case KindBool, KindMap, KindArray:
			v.u = uint64(size)
		}
	}
	if len(n.children) == 0 {
		return nil
	}
	switch kind {
	case KindMap:
		want := len(n.children)
		for ; size > 0 && want > 0; size-- {
			key, voff, err := s.key(data)
			if err != nil {
				return err
			}
			var child *fieldNode
			for i := range n.children {
				if n.children[i].key == string(key) {
					child = &n.children[i]
					break
				}
			}
			if child != nil {
				want--
				if err := s.extractRef(voff, child, out, depth+1); err != nil {
					return err
				}
				if want == 0 {
					return nil
				}
			}
			if data, err = s.skipN(voff, 1, depth+1); err != nil {
				return err
			}
		}
	case KindArray:
		for i := uint(0); i < size; i++ {
			for j := range n.children {
				c := &n.children[j]
				if c.isIndex && ((c.index >= 0 && uint(c.index) == i) || (c.index < 0 && int(i)-int(size) == c.index)) {
					if err := s.extractRef(data, c, out, depth+1); err != nil {
						return err
					}
				}
			}
			if data, err = s.skipN(data, 1, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}
