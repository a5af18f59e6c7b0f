package relp

import (
	"bytes"
	"fmt"
	"strings"
)

// Rsp is the data of an "rsp" frame: a status, its text, and what follows
// the first line (the server's offers, in the answer to "open").
type Rsp struct {
	Code  int
	Text  string
	Extra []byte
}

// OK reports whether the status is 200.
func (r Rsp) OK() bool { return r.Code == 200 }

// ParseRsp parses the data of an "rsp" frame. An empty one (the answer
// to "close") is status 200.
func ParseRsp(data []byte) (Rsp, error) {
	if len(data) == 0 {
		return Rsp{Code: 200}, nil
	}
	line, extra, _ := bytes.Cut(data, []byte{'\n'})
	if len(line) < 3 || !isDigit(line[0]) || !isDigit(line[1]) || !isDigit(line[2]) || (len(line) > 3 && line[3] != ' ') {
		return Rsp{}, fmt.Errorf("relp: response %q does not start with a three-digit status", clip(line))
	}
	r := Rsp{Code: int(line[0]-'0')*100 + int(line[1]-'0')*10 + int(line[2]-'0'), Extra: extra}
	switch t := line[min(4, len(line)):]; {
	case string(t) == "OK":
		r.Text = "OK" // every answer but a refusal: no string made
	case len(t) > 0:
		r.Text = string(t)
	}
	return r, nil
}

// AppendRsp appends the data of an "rsp" frame: "code text", then LF and
// extra if there is any.
func AppendRsp(dst []byte, code int, text string, extra []byte) []byte {
	dst = fmt.Appendf(dst, "%03d", code)
	if text != "" {
		dst = append(dst, ' ')
		dst = append(dst, text...)
	}
	if len(extra) > 0 {
		dst = append(dst, '\n')
		dst = append(dst, extra...)
	}
	return dst
}

// Offer is one name=value line of an "open" command or of its answer.
type Offer struct {
	Name, Value string
}

// ParseOffers parses offers, one name[=value] per line; empty lines are
// skipped.
func ParseOffers(data []byte) ([]Offer, error) {
	var offers []Offer
	for line := range bytes.SplitSeq(data, []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		name, value, _ := strings.Cut(string(line), "=")
		if name == "" {
			return nil, fmt.Errorf("relp: offer %q has no name", clip(line))
		}
		offers = append(offers, Offer{Name: name, Value: value})
	}
	return offers, nil
}

// AppendOffers appends offers, one name=value per line.
func AppendOffers(dst []byte, offers ...Offer) []byte {
	for i, o := range offers {
		if i > 0 {
			dst = append(dst, '\n')
		}
		dst = append(dst, o.Name...)
		dst = append(dst, '=')
		dst = append(dst, o.Value...)
	}
	return dst
}

// Lookup returns the value of the offer name.
func Lookup(offers []Offer, name string) (string, bool) {
	for _, o := range offers {
		if o.Name == name {
			return o.Value, true
		}
	}
	return "", false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}
