package sample

import "math/bits"

// stream is a SplitMix64 generator: small, fast and good enough for sample
// data. Each row or event gets its own stream from (seed, number).
type stream struct{ s uint64 }

func newStream(seed uint64, kind uint64, n int) stream {
	s := stream{s: seed*0x9e3779b97f4a7c15 ^ kind*0xd1b54a32d192ed03 ^ uint64(n)*0xbf58476d1ce4e5b9}
	s.next()
	return s
}

func (r *stream) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// intn returns a number in [0, n), n > 0.
func (r *stream) intn(n int) int {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int(hi)
}

// percent reports true with probability p/100.
func (r *stream) percent(p float64) bool {
	return p > 0 && float64(r.next()>>11)/(1<<53)*100 < p
}

func pick(r *stream, list []string) string { return list[r.intn(len(list))] }

// Stream kinds: rows of different tables drawn from the same seed do not
// share their streams.
const (
	kindCustomer = 1 + iota
	kindSite
	kindEvent
	kindDomain
)
