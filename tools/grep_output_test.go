package tools

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestGrepOutputMatchesTruncateHead: collecting with bounded memory gives
// the truncation of all lines joined, totals included, below and above the
// byte cap, with paths that hold a "\n".
func TestGrepOutputMatchesTruncateHead(t *testing.T) {
	for _, n := range []int{1, 10, 1000, 5000, 20000} {
		for _, nl := range []bool{false, true} {
			var o grepOutput
			var all []string
			for i := range n {
				l := fmt.Sprintf("d/f%d.txt:%d: %s", i%7, i, strings.Repeat("é", i%13))
				if nl && i%100 == 99 {
					l = "odd\nname" + l
				}
				if nl && i == n-1 {
					l += "\n"
				}
				o.add(l)
				all = append(all, l)
			}
			got := o.truncation()
			want := truncateHead(strings.Join(all, "\n"), maxSafeInteger, defaultMaxBytes)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("n=%d nl=%v: got %+v\nwant %+v", n, nl, trunc(fmt.Sprint(got)), trunc(fmt.Sprint(want)))
			}
			if len(o.kept) > defaultMaxBytes/10 {
				t.Errorf("n=%d: kept %d lines", n, len(o.kept))
			}
		}
	}
}
