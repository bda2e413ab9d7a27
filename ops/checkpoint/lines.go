package checkpoint

// op is one line of a line diff: ' ' kept, '-' removed, '+' added, with
// the line's index in its text.
type op struct {
	kind byte
	a, b int // indexes in the old and new lines
}

// maxEdits bounds the Myers search (its memory grows with its square);
// past it the differing middle is one removal and one addition.
const maxEdits = 1000

// lineDiff is Myers' O(ND) diff of two texts' lines.
func lineDiff(a, b []string) []op {
	// Common prefix and suffix.
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	sa, sb := len(a), len(b)
	for sa > p && sb > p && a[sa-1] == b[sb-1] {
		sa--
		sb--
	}
	var out []op
	for i := 0; i < p; i++ {
		out = append(out, op{' ', i, i})
	}
	out = append(out, myers(a[p:sa], b[p:sb], p, p)...)
	for i := 0; i < len(a)-sa; i++ {
		out = append(out, op{' ', sa + i, sb + i})
	}
	return out
}

func myers(a, b []string, oa, ob int) []op {
	n, m := len(a), len(b)
	replace := func() []op {
		out := make([]op, 0, n+m)
		for i := 0; i < n; i++ {
			out = append(out, op{'-', oa + i, ob})
		}
		for j := 0; j < m; j++ {
			out = append(out, op{'+', oa + n, ob + j})
		}
		return out
	}
	if n == 0 || m == 0 {
		return replace()
	}
	max := n + m
	if max > maxEdits {
		max = maxEdits
	}
	off := max + 1
	v := make([]int, 2*max+3)
	var trace [][]int
	found := -1
	for d := 0; d <= max && found < 0; d++ {
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...)) // k in [-d-1, d+1]
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || k != d && v[off+k-1] < v[off+k+1] {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = d
				break
			}
		}
	}
	if found < 0 {
		return replace()
	}
	// Walk back.
	var rev []op
	x, y := n, m
	for d := found; d > 0; d-- {
		pv := trace[d]
		k := x - y
		var pk int
		if k == -d || k != d && pv[k-1+d+1] < pv[k+1+d+1] {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := pv[pk+d+1]
		py := px - pk
		for x > px && y > py {
			x--
			y--
			rev = append(rev, op{' ', oa + x, ob + y})
		}
		if x == px {
			y--
			rev = append(rev, op{'+', oa + x, ob + y})
		} else {
			x--
			rev = append(rev, op{'-', oa + x, ob + y})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, op{' ', oa + x, ob + y})
	}
	out := make([]op, len(rev))
	for i := range rev {
		out[i] = rev[len(rev)-1-i]
	}
	return out
}
