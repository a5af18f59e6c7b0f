package serve

import (
	"net/url"
	"unicode/utf8"
)

func encodeRune(b []byte, r rune) int { return utf8.EncodeRune(b, r) }

func unescapeQuery(s string) (string, error) { return url.QueryUnescape(s) }
