package mmdb

import (
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oschwald/maxminddb-golang/v2"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// TestVerifyAgreesWithMaxminddb: Verify accepts exactly the files of
// MaxMind's test data that maxminddb-golang's Verify accepts, and Findings
// runs on every one of them.
func TestVerifyAgreesWithMaxminddb(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testfiles.MaxMind(t, "test-data"), "*.mmdb"))
	if len(files) < 30 {
		t.Fatalf("only %d test files", len(files))
	}
	valid := 0
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			var want error
			db, err := maxminddb.Open(f)
			if err == nil {
				want = db.Verify()
				db.Close()
			} else {
				want = err
			}
			r, err := Open(f)
			if err == nil {
				defer r.Close()
				err = r.Verify()
			}
			if (err == nil) != (want == nil) {
				t.Fatalf("Verify: %v; maxminddb-golang: %v", err, want)
			}
			if err != nil {
				return
			}
			valid++
			if _, err := r.Findings(); err != nil {
				t.Fatalf("Findings: %v", err)
			}
		})
	}
	if valid < 30 {
		t.Fatalf("only %d valid files", valid)
	}
}

func TestElasticsearchDatabaseType(t *testing.T) {
	for _, c := range []struct {
		file, legacy, current string
	}{
		{"GeoIP2-City-Test.mmdb", "GeoIP2-City", "GeoIP2-City"},
		// 34 bytes: the legacy scan takes the extension byte for text.
		{"GeoIP2-Precision-Enterprise-Shield-Test.mmdb", "", "GeoIP2-Precision-Enterprise-Shield"},
	} {
		r, err := Open(testfiles.MaxMind(t, "test-data/"+c.file))
		if err != nil {
			t.Fatal(err)
		}
		got, err := ElasticsearchDatabaseType(r.Bytes(), false)
		if err != nil || got != c.current {
			t.Errorf("%s: current scan %q, %v", c.file, got, err)
		}
		got, _ = ElasticsearchDatabaseType(r.Bytes(), true)
		if c.legacy != "" && got != c.legacy || c.legacy == "" && got == c.current {
			t.Errorf("%s: legacy scan %q", c.file, got)
		}
		lf := r.LayoutFindings()
		if (c.legacy == "") != (len(lf) == 1 && lf[0].Reader == readerESLegacy) {
			t.Errorf("%s: layout findings %v", c.file, lf)
		}
		r.Close()
	}
	// A text "database_type" in the last 2048 bytes before the metadata.
	b, err := ElasticsearchDatabaseType(append([]byte("database_type\x44Fake"), make([]byte, 600)...), false)
	if err != nil || b != "Fake" {
		t.Errorf("scan of a decoy: %q, %v", b, err)
	}
	if _, err := ElasticsearchDatabaseType([]byte("database_type\x44Fake"), true); err == nil {
		t.Error("legacy scan accepted a file of 512 bytes or less")
	}
}

func TestTypeFindings(t *testing.T) {
	readers := func(fs []Finding) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Reader)
		}
		return out
	}
	for _, typ := range []string{"GeoLite2-City", "GeoLite2-ASN"} {
		if fs := TypeFindings(typ, ModelOf(typ)); len(fs) != 0 {
			t.Errorf("%s: %v", typ, fs)
		}
	}
	got := readers(TypeFindings("Acme-Internal-City", ModelCity))
	want := []string{
		"Logstash geoip filter 7.2.x (Logstash 8.14 and older)",
		readerES + " geoip processor (not ip_location)",
		readerPerl + "->city()",
		"geoip2-golang v2 City()",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Acme-Internal-City refused by %q, want %q", got, want)
	}
	got = readers(TypeFindings("Acme-ASN", ModelASN))
	if len(got) != len(TypeRules[ModelASN])-2 || slices.Contains(got, "GeoIP2-node Reader asn()") || slices.Contains(got, readerES) {
		t.Errorf("Acme-ASN refused by %q", got)
	}
	if fs := TypeFindings("GeoIP2-City-Shield", ModelCity); !strings.Contains(readers(fs)[0], "Logstash") {
		t.Errorf("GeoIP2-City-Shield: %v", fs)
	}
	if ModelOf("Lutkit-Custom") != "" || TypeFindings("Lutkit-Custom", "") != nil {
		t.Error("a custom type has type findings")
	}
}

func TestIPv4Aliases(t *testing.T) {
	r, err := Open(testfiles.MaxMind(t, "test-data/GeoIP2-City-Test.mmdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.IPv4Aliases(); !slices.Equal(got, AliasNetworks) {
		t.Errorf("GeoIP2-City-Test aliases %v", got)
	}
	// Through the alias, a mapped address finds the IPv4 record.
	m4, _ := r.lookup(netip.MustParseAddr("81.2.69.160"))
	m6, _ := r.lookup(netip.MustParseAddr("::ffff:81.2.69.160"))
	if !m4.Found() || m4.Offset() != m6.Offset() {
		t.Errorf("::ffff:81.2.69.160 %v, 81.2.69.160 %v", m6, m4)
	}
	r4, err := Open(testfiles.MaxMind(t, "test-data/MaxMind-DB-test-ipv4-24.mmdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer r4.Close()
	if got := r4.IPv4Aliases(); got != nil {
		t.Errorf("IPv4 tree aliases %v", got)
	}
}
