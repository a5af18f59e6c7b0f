package parse

// EachSDParam calls fn for every SD-PARAM in raw RFC 5424 structured data
// (Event.StructuredData), in order, until fn returns false. An SD-ELEMENT
// without params yields one call with name and value nil.
//
// value is the raw text between the quotes: escapes (\" \\ \]) are NOT
// removed, so value aliases sd and nothing is allocated. Use
// AppendSDUnescape to decode a value that contains a backslash. Parsing
// stops quietly at the first malformed element.
func EachSDParam(sd []byte, fn func(id, name, value []byte) bool) {
	i := 0
	for i < len(sd) && sd[i] == '[' {
		i++
		s := i
		for i < len(sd) && sd[i] != ' ' && sd[i] != ']' {
			i++
		}
		if i >= len(sd) {
			return
		}
		id := sd[s:i:i]
		params := 0
		for i < len(sd) && sd[i] == ' ' {
			i++
			s = i
			for i < len(sd) && sd[i] != '=' && sd[i] != ' ' && sd[i] != ']' {
				i++
			}
			if i+1 >= len(sd) || sd[i] != '=' || sd[i+1] != '"' {
				return
			}
			name := sd[s:i:i]
			i += 2
			s = i
			for i < len(sd) && sd[i] != '"' {
				if sd[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(sd) {
				return
			}
			params++
			if !fn(id, name, sd[s:i:i]) {
				return
			}
			i++ // closing quote
		}
		if i >= len(sd) || sd[i] != ']' {
			return
		}
		i++
		if params == 0 && !fn(id, nil, nil) {
			return
		}
	}
}

// AppendSDUnescape appends an SD-PARAM value with its RFC 5424 escapes
// (\" \\ \]) removed. Any other backslash is kept, as the RFC requires.
func AppendSDUnescape(dst, value []byte) []byte {
	for i := 0; i < len(value); i++ {
		c := value[i]
		if c == '\\' && i+1 < len(value) {
			if n := value[i+1]; n == '"' || n == '\\' || n == ']' {
				dst = append(dst, n)
				i++
				continue
			}
		}
		dst = append(dst, c)
	}
	return dst
}
