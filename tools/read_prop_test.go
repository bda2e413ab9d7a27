package tools

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/memfs"
)

// readReference is pi's whole-file read (read.ts), written as plainly as
// possible, to check the streaming implementation against.
func readReference(all []string, p string, offset, limit *int) (string, string, string) {
	total := len(all)
	start := 0
	if offset != nil && *offset != 0 {
		start = max(0, *offset-1)
	}
	if start >= total {
		return "", "", fmt.Sprintf("Offset %d is beyond end of file (%d lines total)", *offset, total)
	}
	var selected string
	userLimited := -1
	if limit != nil {
		end := min(start+*limit, total)
		sliceEnd := end
		if sliceEnd < 0 {
			sliceEnd = max(total+sliceEnd, 0)
		}
		if sliceEnd > start {
			selected = strings.Join(all[start:sliceEnd], "\n")
		}
		userLimited = end - start
	} else {
		selected = strings.Join(all[start:], "\n")
	}
	tr := truncateHead(selected, defaultMaxLines, defaultMaxBytes)
	details := func() string {
		b, _ := loop.MarshalNoEscape(map[string]any{"truncation": tr})
		return string(b)
	}
	sd := start + 1
	switch {
	case tr.FirstLineExceedsLimit:
		return fmt.Sprintf("[Line %d is %s, exceeds 50.0KB limit. Use bash: sed -n '%dp' %s | head -c 51200]",
			sd, formatSize(len(all[start])), sd, p), details(), ""
	case tr.Truncated:
		e := sd + tr.OutputLines - 1
		if tr.TruncatedBy == byLines {
			return fmt.Sprintf("%s\n\n[Showing lines %d-%d of %d. Use offset=%d to continue.]", tr.Content, sd, e, total, e+1), details(), ""
		}
		return fmt.Sprintf("%s\n\n[Showing lines %d-%d of %d (50.0KB limit). Use offset=%d to continue.]", tr.Content, sd, e, total, e+1), details(), ""
	case limit != nil && start+userLimited < total:
		return fmt.Sprintf("%s\n\n[%d more lines in file. Use offset=%d to continue.]", tr.Content,
			total-(start+userLimited), start+userLimited+1), "", ""
	}
	return tr.Content, "", ""
}

// lineCountMem adds the line-count capability to memfs, so read takes its
// early-exit path.
type lineCountMem struct{ *memfs.FS }

func (m lineCountMem) CountLines(ctx context.Context, name string) (int64, int64, error) {
	return ops.CountLines(ctx, m.FS, name)
}

// textPool is random ASCII to cut lines from; poolBad adds multi-byte
// characters, invalid UTF-8 and truncated sequences (cutting it at random
// splits characters too).
var textPool, poolBad = func() ([]byte, []byte) {
	r := rand.New(rand.NewPCG(3, 4))
	var good, bad []byte
	for len(good) < 1<<17 {
		switch k := r.IntN(100); {
		case k == 0:
			good = append(good, 'y')
			bad = append(bad, 0xff)
		case k == 1:
			good = append(good, 'x')
			bad = append(bad, 0xe2, 0x82)
		case k == 2:
			good = append(good, 'z')
			bad = append(bad, "é🙂"...)
		default:
			c := byte('a' + r.IntN(26))
			good = append(good, c)
			bad = append(bad, c)
		}
	}
	return good, bad
}()

func randomText(r *rand.Rand, big bool) []byte {
	pool := poolBad
	n := r.IntN(3000)
	if big {
		pool, n = textPool, 80000+r.IntN(20000)
	}
	var b []byte
	for i := 0; i < n; i++ {
		l := r.IntN(40)
		switch r.IntN(50) {
		case 0:
			if !big {
				l = r.IntN(70000)
			}
		case 1:
			l = 0
		}
		off := r.IntN(len(pool) - l)
		b = append(b, pool[off:off+l]...)
		if big && l%7 == 0 {
			b = append(b, "é🙂"...)
		}
		if i < n-1 || r.IntN(2) == 0 {
			b = append(b, '\n')
		}
	}
	return b
}

func TestReadMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	cases := 40
	if raceEnabled || testing.Short() {
		cases = 13
	}
	for i := range cases {
		big := i%13 == 12
		content := randomText(r, big)
		m := memfs.New()
		if err := m.AddFile("/work/f.txt", content, 0o644); err != nil {
			t.Fatal(err)
		}
		var fsys ops.FS = m
		if big {
			fsys = lineCountMem{m}
			if content[len(content)-1] != '\n' {
				content = append(content, '\n') // the early-exit path assumes it (documented)
				m.AddFile("/work/f.txt", content, 0o644)
			}
		}
		read := NewRead(fsys, m.Info())
		all := strings.Split(decodeString(content), "\n")
		for range 6 {
			var off, lim *int
			args := `{"path":"f.txt"`
			if r.IntN(2) == 0 {
				o := r.IntN(3500)
				off = &o
				args += `,"offset":` + strconv.Itoa(o)
			}
			if r.IntN(2) == 0 {
				l := r.IntN(2500) - 5
				lim = &l
				args += `,"limit":` + strconv.Itoa(l)
			}
			args += "}"
			wantText, wantDetails, wantErr := readReference(all, "f.txt", off, lim)
			text, details, errText, _ := call(t, ctx, read, args)
			if text != wantText || details != wantDetails || errText != wantErr {
				t.Fatalf("case %d %s (len %d):\n got  %q %q %q\n want %q %q %q", i, args, len(content),
					trunc(text), trunc(details), errText, trunc(wantText), trunc(wantDetails), wantErr)
			}
		}
	}
}
