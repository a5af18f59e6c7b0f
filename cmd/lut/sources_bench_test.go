package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/dbtest"
)

// TestSourcesAt2M is a measurement, not a check: it compiles a
// 2,000,000-row table from PostgreSQL, from MariaDB and from a JSON
// dictionary, and a 200,000-entry YAML dictionary, each with the lut
// binary named by LUTKIT_BENCH_LUT under /usr/bin/time -v, and logs wall
// time, rows/s and peak RSS (BENCHMARKS.md, "Sources"). It runs only
// when LUTKIT_BENCH_LUT is set:
//
//	go build -o /tmp/lut ./cmd/lut
//	LUTKIT_BENCH_LUT=/tmp/lut go test -count=1 -v -timeout 1h -run TestSourcesAt2M ./cmd/lut/
func TestSourcesAt2M(t *testing.T) {
	lut := os.Getenv("LUTKIT_BENCH_LUT")
	if lut == "" {
		t.Skip("a measurement: set LUTKIT_BENCH_LUT to a lut binary to run it")
	}
	const n = 2_000_000
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte(dbtest.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	measure := func(name string, rows int, key string, args ...string) {
		t.Helper()
		out := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".lut")
		args = append([]string{"-v", lut, "compile", "--key", key, "--progress", "never", "--out", out}, args...)
		b, err := exec.Command("/usr/bin/time", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, b)
		}
		s := string(b)
		wall := regexp.MustCompile(`Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)`).FindStringSubmatch(s)
		rss := regexp.MustCompile(`Maximum resident set size \(kbytes\): (\d+)`).FindStringSubmatch(s)
		cpuU := regexp.MustCompile(`User time \(seconds\): (\S+)`).FindStringSubmatch(s)
		cpuS := regexp.MustCompile(`System time \(seconds\): (\S+)`).FindStringSubmatch(s)
		if wall == nil || rss == nil || !strings.Contains(s, fmt.Sprintf(": %d rows,", rows)) {
			t.Fatalf("%s: unexpected output:\n%s", name, s)
		}
		var m, sec float64
		if _, err := fmt.Sscanf(wall[1], "%f:%f", &m, &sec); err != nil {
			t.Fatal(err)
		}
		w := m*60 + sec
		var kb int64
		if _, err := fmt.Sscan(rss[1], &kb); err != nil {
			t.Fatal(err)
		}
		t.Logf("%-10s %9d rows  wall %7.2f s  user %s s sys %s s  %9.0f rows/s  peak RSS %5d MiB", name, rows, w, cpuU[1], cpuS[1], float64(rows)/w, kb>>10)
	}

	// PostgreSQL and MariaDB: the same 2M rows, about 80 bytes each.
	pg := dbtest.StartPostgres(t)
	start := time.Now()
	pg.Exec(t, "", `CREATE TABLE big AS SELECT g AS id, 'name ' || g AS name, 'user' || g || '@example.com' AS email,
		(ARRAY['DE','FR','US'])[g%3+1] AS country, g * 0.5 AS score FROM generate_series(1, 2000000) g`)
	t.Logf("postgres: loaded in %v", time.Since(start).Round(time.Second))
	measure("postgres", n, "id", "--postgres", pg.URL, "--password-file", pw, "--query", "SELECT * FROM big")

	my := dbtest.StartMariaDB(t)
	start = time.Now()
	my.Exec(t, `CREATE TABLE big (id INT PRIMARY KEY, name TEXT, email TEXT, country TEXT, score DECIMAL(12,1))`,
		`INSERT INTO big SELECT seq, CONCAT('name ', seq), CONCAT('user', seq, '@example.com'), ELT(seq%3+1, 'DE', 'FR', 'US'), seq * 0.5 FROM seq_1_to_2000000`)
	t.Logf("mariadb: loaded in %v", time.Since(start).Round(time.Second))
	measure("mariadb", n, "id", "--mysql", my.DSN, "--password-file", pw, "--query", "SELECT * FROM big")

	// A JSON dictionary of the same rows, and a smaller YAML one.
	writeDict := func(path string, rows int, yaml bool) {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		if !yaml {
			w.WriteString("{")
		}
		country := []string{"DE", "FR", "US"}
		for i := 1; i <= rows; i++ {
			if yaml {
				fmt.Fprintf(w, "\"%d\": {name: name %d, email: user%d@example.com, country: %s, score: %.1f}\n", i, i, i, country[i%3], float64(i)*0.5)
				continue
			}
			if i > 1 {
				w.WriteString(",\n")
			}
			fmt.Fprintf(w, `"%d": {"name": "name %d", "email": "user%d@example.com", "country": "%s", "score": %.1f}`, i, i, i, country[i%3], float64(i)*0.5)
		}
		if !yaml {
			w.WriteString("}")
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		fi, _ := os.Stat(path)
		t.Logf("%s: %d MiB", filepath.Base(path), fi.Size()>>20)
	}
	jsonPath := filepath.Join(dir, "big.json")
	writeDict(jsonPath, n, false)
	measure("json", n, "key", jsonPath)
	measure("json header", n, "key", "--header", "key,name,email,country,score", jsonPath)
	yamlPath := filepath.Join(dir, "big.yaml")
	writeDict(yamlPath, n/10, true)
	measure("yaml", n/10, "key", yamlPath)
}
