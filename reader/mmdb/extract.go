package mmdb

// extract walks the value at off and fills the slots of n and its children.
// Map keys and leaf values take a fast path when their control bytes alone
// say what they are (itemLen); anything else goes through ctrl, which also
// reports what is corrupt.
func (s section) extract(off uint, n *fieldNode, out []Value, depth int) error {
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
		out[n.slot].set(s, kind, size, data)
	}
	if len(n.children) == 0 {
		return nil
	}
	switch kind {
	case KindMap:
		want := len(n.children)
		for ; size > 0 && want > 0; size-- {
			if data, size, want = s.leafEntries(data, size, n, out, want); size == 0 || want == 0 {
				return nil
			}
			// An entry leafEntries leaves: read in full, with its errors.
			child, voff, err := s.mapKey(data, n.children)
			if err != nil {
				return err
			}
			vkind, vsize, vdata, next, simple := s.item(voff)
			if child != nil {
				want--
				if simple && len(child.children) == 0 && child.slot >= 0 && child.slot < len(out) {
					out[child.slot].set(s, vkind, vsize, vdata)
				} else if err := s.extract(voff, child, out, depth+1); err != nil {
					return err
				}
				if want == 0 {
					return nil
				}
			}
			if simple {
				data = next
			} else if data, err = s.skipN(voff, 1, depth+1); err != nil {
				return err
			}
		}
	case KindArray:
		for i := uint(0); i < size; i++ {
			for j := range n.children {
				c := &n.children[j]
				if c.isIndex && ((c.index >= 0 && uint(c.index) == i) || (c.index < 0 && int(i)-int(size) == c.index)) {
					if err := s.extract(data, c, out, depth+1); err != nil {
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

// set stores the value of the given kind whose payload is at data.
func (v *Value) set(s section, kind Kind, size, data uint) {
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

// leafEntries reads the entries of a map, size of them from data, while
// they are simple: a key that is a string of less than 29 bytes or a
// pointer of up to 19 bits to one, and a value item decodes, stored when
// its key names a leaf of n. It returns where it stopped: the offset of
// the first entry it did not read, the entries left and the leaves still
// wanted. The caller reads the entry it stopped at in full.
func (s section) leafEntries(data, size uint, n *fieldNode, out []Value, want int) (uint, uint, int) {
	end := uint(len(s))
	for ; size > 0 && want > 0; size-- {
		if data >= end {
			break
		}
		koff, voff, inline := data, uint(0), false
		switch b := s[data]; b >> 3 {
		case byte(KindPointer) << 2: // a pointer of 11 bits
			if end-data < 2 {
				return data, size, want
			}
			koff, voff = uint(b&7)<<8|uint(s[data+1]), data+2
		case byte(KindPointer)<<2 | 1: // a pointer of 19 bits
			if end-data < 3 {
				return data, size, want
			}
			koff, voff = (uint(b&7)<<16|uint(s[data+1])<<8|uint(s[data+2]))+2048, data+3
		default:
			inline = true
		}
		if koff >= end {
			break
		}
		kb := s[koff]
		klen := uint(kb & 0x1f)
		if Kind(kb>>5) != KindString || klen >= 29 || klen >= end-koff {
			break
		}
		if inline {
			voff = koff + 1 + klen
		}
		key := s[koff+1 : koff+1+klen]
		var child *fieldNode
		for i := range n.children {
			if c := &n.children[i]; c.key == string(key) {
				child = c
				break
			}
		}
		kind, vsize, vdata, next, ok := s.item(voff)
		if !ok {
			break
		}
		if child != nil {
			if len(child.children) != 0 || child.slot < 0 || child.slot >= len(out) {
				break
			}
			out[child.slot].set(s, kind, vsize, vdata)
			want--
		}
		data = next
	}
	return data, size, want
}

// mapKey reads the map key at off and returns the child of children it
// names (nil for none) and the offset of the key's value.
func (s section) mapKey(off uint, children []fieldNode) (*fieldNode, uint, error) {
	kind, size, data, voff, ok := s.item(off)
	if !ok || kind != KindString {
		// A long key, or not a string: key reports what is wrong.
		key, v, err := s.key(off)
		if err != nil {
			return nil, 0, err
		}
		for i := range children {
			if children[i].key == string(key) {
				return &children[i], v, nil
			}
		}
		return nil, v, nil
	}
	key := s[data : data+size]
	for i := range children {
		c := &children[i]
		if len(c.key) == len(key) && c.key[0] == key[0] && c.key == string(key) {
			return c, voff, nil
		}
	}
	return nil, voff, nil
}

// item decodes the item at off when it is small and simple: a string,
// bytes or number of less than 29 bytes or a boolean, or a pointer to
// one. It returns the value's kind, size and payload offset, as ctrl
// does, and next, the offset after the item at off (after a pointer, not
// its target); the item is entirely inside the section. ok is false for
// anything else (maps, arrays, long values, what is corrupt), left to
// ctrl.
func (s section) item(off uint) (kind Kind, size, data, next uint, ok bool) {
	end := uint(len(s))
	if off >= end {
		return 0, 0, 0, 0, false
	}
	b := s[off]
	l := uint(itemLen[b])
	if l == 0 || l > end-off {
		kind, size, data, next, ok = s.extItem(off)
		return kind, size, data, next, ok
	}
	next = off + l
	if Kind(b>>5) == KindPointer {
		if off = s.pointer(off, b); off >= end {
			return 0, 0, 0, 0, false
		}
		b = s[off]
		if l = uint(itemLen[b]); l == 0 || l > end-off || Kind(b>>5) == KindPointer {
			kind, size, data, _, ok = s.extItem(off)
			return kind, size, data, next, ok
		}
	}
	return Kind(b >> 5), l - 1, off + 1, next, true
}

// extItem is item for the extended types: int32, uint64, uint128 and
// float values of less than 29 bytes, and booleans.
func (s section) extItem(off uint) (kind Kind, size, data, next uint, ok bool) {
	end := uint(len(s))
	if off+1 >= end || s[off]>>5 != 0 {
		return 0, 0, 0, 0, false
	}
	size = uint(s[off] & 0x1f)
	kind = Kind(min(uint(s[off+1])+7, 255))
	data = off + 2
	switch kind {
	case KindBool:
		if size > 1 {
			return 0, 0, 0, 0, false
		}
		return kind, size, data, data, true
	case KindInt32, KindUint64, KindUint128, KindFloat:
		if lim := scalarSizes[kind]; size >= 29 || size < lim[0] || size > lim[1] || size > end-data {
			return 0, 0, 0, 0, false
		}
		return kind, size, data, data + size, true
	}
	return 0, 0, 0, 0, false
}
