package format

import "testing"

// BenchmarkMatchGlob matches host-group globs against host names in both
// syntaxes, in one run: "star" is the first tables' byte by byte match,
// "question" the character by character one with '?'.
func BenchmarkMatchGlob(b *testing.B) {
	globs := [][]byte{[]byte("web-*-01"), []byte("*.corp.example.com"), []byte("*-db-*"), []byte("10.1.*"), []byte("*a*b*c*d*")}
	keys := [][]byte{[]byte("web-frontend-eu-01"), []byte("mail.eu.corp.example.com"), []byte("pg-db-replica-02"), []byte("10.1.200.3"), []byte("xaxbxcxxxxxxxxxxxxxxxx")}
	for _, s := range []struct {
		name string
		f    GlobFlags
	}{{"star", 0}, {"question", GlobQuestion}} {
		b.Run(s.name, func(b *testing.B) {
			n := 0
			for i := range b.N {
				if MatchGlob(globs[i%len(globs)], keys[i%len(keys)], s.f) {
					n++
				}
			}
			if b.N >= len(globs) && n == 0 {
				b.Fatal("no glob matched")
			}
		})
	}
}
