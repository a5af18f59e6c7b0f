package sample

import (
	"fmt"
	"io"
	"strconv"
)

// DomainHeader is the header of the domains table.
var DomainHeader = []string{"domain", "threat", "source"}

var (
	domainWords   = []string{"cdn-files", "login-verify", "update-srv", "pay-secure", "track", "dl", "static-img", "acct-check", "mail-relay", "node"}
	domainTLDs    = []string{"top", "xyz", "click", "zip", "info", "biz"}
	domainThreats = []string{"phishing", "malware", "c2", "spam", "scam"}
	domainSources = []string{"feed-a", "feed-b", "internal"}
	// Event names under a listed domain, and benign ones: benign names
	// end in .com or .org, which no listed domain does, so that no benign
	// name matches the list by its suffix.
	domainSubs   = []string{"", "www.", "cdn.", "api.", "m.", "login.", "a.b."}
	benignWords  = []string{"shop", "news", "mail", "docs", "video", "maps", "corp", "bank"}
	benignTLDs   = []string{"com", "org"}
	benignSubs   = []string{"www.", "api.", "static.", "m.", ""}
	benignSpread = 50_000
)

// Domain is one row of the domains table: a domain an indicator-of-
// compromise list names, matched by its suffix (`lut compile --match
// suffix`): it matches itself and every name under it.
type Domain struct {
	Name, Threat, Source string
}

// NewDomain returns domain i (0-based) of the table of seed. Names are
// distinct: each carries its number.
func NewDomain(seed uint64, i int) Domain {
	r := newStream(seed, kindDomain, i)
	return Domain{
		Name:   pick(&r, domainWords) + strconv.Itoa(i+1) + "." + pick(&r, domainTLDs),
		Threat: pick(&r, domainThreats),
		Source: pick(&r, domainSources),
	}
}

// WriteDomains writes the domains table of seed with n rows as CSV.
func WriteDomains(w io.Writer, n int, seed uint64) error {
	if n < 1 {
		return fmt.Errorf("sample: %d domains: want at least 1", n)
	}
	if _, err := w.Write(appendCSVHeader(nil, DomainHeader)); err != nil {
		return err
	}
	return writeOrdered(w, 0, n-1, func(b []byte, i int) []byte {
		d := NewDomain(seed, i)
		b = append(b, d.Name...)
		b = append(append(b, ','), d.Threat...)
		b = append(append(b, ','), d.Source...)
		return append(b, '\n')
	})
}

// eventDomain draws the dom of an event: with probability ioc percent a
// name at or under one of the n listed domains of seed (and its number),
// else a benign name (-1).
func eventDomain(r *stream, seed uint64, n int, ioc float64) (string, int) {
	if r.percent(ioc) {
		i := r.intn(n)
		return pick(r, domainSubs) + NewDomain(seed, i).Name, i
	}
	return pick(r, benignSubs) + pick(r, benignWords) + strconv.Itoa(1+r.intn(benignSpread)) + "." + pick(r, benignTLDs), -1
}
