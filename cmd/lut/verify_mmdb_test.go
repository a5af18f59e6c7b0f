package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oschwald/maxminddb-golang/v2"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// TestVerifyMaxMindTestData: lut verify exits 0 on every file of MaxMind's
// test data that maxminddb-golang's Verify accepts and 1 on the others and
// on every file of bad-data.
func TestVerifyMaxMindTestData(t *testing.T) {
	good, _ := filepath.Glob(filepath.Join(testfiles.MaxMind(t, "test-data"), "*.mmdb"))
	bad, _ := filepath.Glob(filepath.Join(testfiles.MaxMind(t, "bad-data"), "*/*.mmdb"))
	if len(good) < 30 || len(bad) < 10 {
		t.Fatalf("%d test files, %d bad files", len(good), len(bad))
	}
	valid := 0
	for _, f := range append(good, bad...) {
		want := 0
		if db, err := maxminddb.Open(f); err != nil {
			want = 1
		} else {
			if db.Verify() != nil {
				want = 1
			}
			db.Close()
		}
		if strings.Contains(f, "bad-data") && want == 0 {
			t.Fatalf("%s: maxminddb-golang accepts a bad-data file", f)
		}
		stdout, stderr, err := runLut(t, "verify", f)
		got := 0
		var ee *exitError
		if errors.As(err, &ee) {
			got = ee.code
		} else if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if got != want {
			t.Errorf("%s: exit %d, want %d\n%s%s", filepath.Base(f), got, want, stdout, stderr)
		}
		if want == 0 {
			valid++
			if !strings.Contains(stdout, ": ok (valid MaxMind DB") {
				t.Errorf("%s: %q", f, stdout)
			}
		} else if !strings.Contains(stderr, "FAILED") {
			t.Errorf("%s: no FAILED in %q", f, stderr)
		}
	}
	if valid != 36 {
		t.Errorf("%d valid files, want 36", valid)
	}
}

// TestVerifyStrict: findings are warnings naming the reader; --strict
// makes them failures.
func TestVerifyStrict(t *testing.T) {
	f := testfiles.MaxMind(t, "test-data/GeoIP2-City-Shield-Test.mmdb")
	stdout, stderr, err := runLut(t, "verify", f)
	if err != nil || !strings.Contains(stdout, "ok") {
		t.Fatalf("verify: %v %s %s", err, stdout, stderr)
	}
	for _, want := range []string{
		`warning: Elasticsearch ingest-geoip: refuses database type "GeoIP2-City-Shield"`,
		`warning: geoip2-golang v2 City(): refuses`,
		`warning: Logstash geoip filter 7.2.x (Logstash 8.14 and older): refuses`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("no %q in\n%s", want, stderr)
		}
	}
	_, stderr, err = runLut(t, "verify", "--strict", f)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 1 || !strings.Contains(stderr, "error: Elasticsearch ingest-geoip: refuses") {
		t.Fatalf("--strict: %v\n%s", err, stderr)
	}
	// A file every reader reads passes --strict.
	stdout, stderr, err = runLut(t, "verify", "--strict", testfiles.MaxMind(t, "test-data/GeoLite2-ASN-Test.mmdb"))
	if err != nil || stderr != "" || !strings.Contains(stdout, "ok") {
		t.Fatalf("--strict GeoLite2-ASN-Test: %v %s %s", err, stdout, stderr)
	}
}
