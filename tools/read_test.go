package tools

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"golang.org/x/image/bmp"

	"github.com/pi-sandbox/pi-sandbox/ops/memfs"
)

func TestReadGolden(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *testEnv) {
		e.put("empty.txt", nil)
		e.put("ab.txt", []byte("a\nb\n"))
		e.put("abc.txt", []byte("a\nb\nc"))
		e.put("2500.txt", []byte(lines("Line ", 2500)))
		e.put("long.txt", []byte(strings.Repeat("x", 60000)+"\nshort\n"))
		e.put("second.txt", []byte("first\n"+strings.Repeat("y", 51201)))
		e.put("wide.txt", []byte(strings.Repeat(strings.Repeat("w", 99)+"\n", 1000)))
		e.put("bad.txt", []byte("a\xffb\xe2\x82\r\n\xef\xbb\xbfz"))
		e.put("fake.png", []byte("just text\n"))
		e.put("dir/x.txt", []byte("in dir"))
		e.put("sp ace.txt", []byte("space"))
		read := NewRead(e.b, e.b.Info())
		ctx := context.Background()
		tests := []struct {
			args, text, err string
			details         bool
		}{
			{args: `{"path":"empty.txt"}`, text: ""},
			{args: `{"path":"ab.txt"}`, text: "a\nb\n"},
			{args: `{"path":"ab.txt","limit":1}`, text: "a\n\n[2 more lines in file. Use offset=2 to continue.]"},
			{args: `{"path":"abc.txt","limit":0}`, text: "\n\n[3 more lines in file. Use offset=1 to continue.]"},
			{args: `{"path":"ab.txt","offset":3}`, text: ""},
			{args: `{"path":"ab.txt","offset":0,"limit":2}`, text: "a\nb\n\n[1 more lines in file. Use offset=3 to continue.]"},
			{args: `{"path":"ab.txt","offset":2,"limit":5}`, text: "b\n"},
			{args: `{"path":"abc.txt","limit":-1}`, text: "a\nb\n\n[4 more lines in file. Use offset=0 to continue.]"}, // pi: slice(0,-1), remaining total-(-1)
			{args: `{"path":"empty.txt","offset":2}`, err: "Offset 2 is beyond end of file (1 lines total)"},
			{args: `{"path":"ab.txt","offset":4}`, err: "Offset 4 is beyond end of file (3 lines total)"},
			{args: `{"path":"ab.txt","offset":1e300}`, err: "Offset 1e+300 is beyond end of file (3 lines total)"},
			{args: `{"path":"ab.txt","offset":2,"limit":1e300}`, text: "b\n"},
			{args: `{"path":"2500.txt"}`, text: lines("Line ", 2000) + "\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]", details: true},
			{args: `{"path":"2500.txt","offset":2001}`, text: strings.TrimPrefix(lines("Line ", 2500), lines("Line ", 2000)+"\n")},
			{args: `{"path":"2500.txt","offset":10,"limit":2}`, text: "Line 10\nLine 11\n\n[2489 more lines in file. Use offset=12 to continue.]"},
			{args: `{"path":"long.txt"}`, text: "[Line 1 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '1p' long.txt | head -c 51200]", details: true},
			{args: `{"path":"long.txt","offset":2}`, text: "short\n"},
			{args: `{"path":"second.txt","offset":2}`, text: "[Line 2 is 50.0KB, exceeds 50.0KB limit. Use bash: sed -n '2p' second.txt | head -c 51200]", details: true},
			{args: `{"path":"second.txt"}`, text: "first\n\n[Showing lines 1-1 of 2 (50.0KB limit). Use offset=2 to continue.]", details: true},
			{args: `{"path":"wide.txt"}`, text: strings.TrimSuffix(strings.Repeat(strings.Repeat("w", 99)+"\n", 512), "\n") + "\n\n[Showing lines 1-512 of 1001 (50.0KB limit). Use offset=513 to continue.]", details: true},
			{args: `{"path":"bad.txt"}`, text: "a\uFFFDb\uFFFD\r\n\uFEFFz"},
			{args: `{"path":"fake.png"}`, text: "just text\n"},
			{args: `{"path":"@dir/x.txt"}`, text: "in dir"},
			{args: `{"path":"sp\u00A0ace.txt"}`, text: "space"},
			{args: `{"path":"nope.txt"}`, err: "ENOENT: no such file or directory, access '" + e.wd + "/nope.txt'"},
			{args: `{"path":"dir"}`, err: "EISDIR: illegal operation on a directory, read"},
			{args: `{"path":"ab.txt/x"}`, err: "ENOTDIR: not a directory, access '" + e.wd + "/ab.txt/x'"},
		}
		for _, tt := range tests {
			text, details, errText, _ := call(t, ctx, read, tt.args)
			if errText != tt.err || text != tt.text || (details != "") != tt.details {
				t.Errorf("read %s:\n text %q\n err  %q\n details %s\nwant text %q\n err  %q", tt.args,
					trunc(text), errText, trunc(details), trunc(tt.text), tt.err)
			}
		}

		_, details, _, _ := call(t, ctx, read, `{"path":"2500.txt"}`)
		wantDetails := `"truncated":true,"truncatedBy":"lines","totalLines":2500,"totalBytes":` + itoa(len(lines("Line ", 2500))) +
			`,"outputLines":2000,"outputBytes":` + itoa(len(lines("Line ", 2000))) +
			`,"lastLinePartial":false,"firstLineExceedsLimit":false,"maxLines":2000,"maxBytes":51200}}`
		if !strings.HasPrefix(details, `{"truncation":{"content":"Line 1\nLine 2`) || !strings.HasSuffix(details, wantDetails) {
			t.Errorf("2500 details: %s", trunc(details))
		}
		_, details, _, _ = call(t, ctx, read, `{"path":"long.txt"}`)
		if details != `{"truncation":{"content":"","truncated":true,"truncatedBy":"bytes","totalLines":2,"totalBytes":60007,"outputLines":0,"outputBytes":0,"lastLinePartial":false,"firstLineExceedsLimit":true,"maxLines":2000,"maxBytes":51200}}` {
			t.Errorf("long details: %s", details)
		}

		actx, cancel := context.WithCancel(ctx)
		cancel()
		if _, _, errText, _ := call(t, actx, read, `{"path":"ab.txt"}`); errText != "Operation aborted" {
			t.Errorf("aborted: %q", errText)
		}
	})
}

func trunc(s string) string {
	if len(s) > 300 {
		return s[:150] + "…" + s[len(s)-150:]
	}
	return s
}

func TestReadImages(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	img.Set(1, 1, color.RGBA{255, 0, 0, 255})
	var pngBuf, bmpBuf, gifBuf, jpgBuf bytes.Buffer
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(png.Encode(&pngBuf, img))
	must(bmp.Encode(&bmpBuf, img))
	must(gif.Encode(&gifBuf, img, nil))
	must(jpeg.Encode(&jpgBuf, img, nil))
	webp, err := os.ReadFile("testdata/small.webp")
	must(err)
	forEachBackend(t, func(t *testing.T, e *testEnv) {
		e.put("a.png", pngBuf.Bytes())
		e.put("pic.bmp", bmpBuf.Bytes())
		e.put("gif", gifBuf.Bytes())
		e.put("jpg", jpgBuf.Bytes())
		e.put("webp", webp)
		e.put("jls", []byte("\xff\xd8\xff\xf7rest"))
		e.put("bm.txt", []byte("BM is not a bitmap header, just text"))
		e.put("broken.bmp", append([]byte("BM"), append(make([]byte, 12), 40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)...))
		e.put("broken.gif", []byte("GIF89a\x01\x00\x01\x00rest"))
		read := NewRead(e.b, e.b.Info())
		ctx := context.Background()

		text, _, errText, res := call(t, ctx, read, `{"path":"a.png"}`)
		if errText != "" || text != "Read image file [image/png]" || len(res.Content) != 2 ||
			res.Content[1].Type != "image" || res.Content[1].MimeType != "image/png" ||
			res.Content[1].Data != base64.StdEncoding.EncodeToString(pngBuf.Bytes()) {
			t.Errorf("png: %q %q %+v", text, errText, res)
		}
		text, _, _, res = call(t, ctx, read, `{"path":"pic.bmp"}`)
		if text != "Read image file [image/png]\n[Image converted from image/bmp to image/png.]" || len(res.Content) != 2 || res.Content[1].MimeType != "image/png" {
			t.Fatalf("bmp: %q", text)
		}
		raw, _ := base64.StdEncoding.DecodeString(res.Content[1].Data)
		if got, err := png.Decode(bytes.NewReader(raw)); err != nil || got.Bounds() != img.Bounds() {
			t.Errorf("bmp not converted to a valid png: %v", err)
		}
		for name, c := range map[string]struct {
			mime string
			data []byte
		}{"gif": {"image/gif", gifBuf.Bytes()}, "jpg": {"image/jpeg", jpgBuf.Bytes()}, "webp": {"image/webp", webp}} {
			text, _, _, res := call(t, ctx, read, `{"path":"`+name+`"}`)
			if text != "Read image file ["+c.mime+"]" || len(res.Content) != 2 || res.Content[1].Data != base64.StdEncoding.EncodeToString(c.data) {
				t.Errorf("%s: %q", name, text)
			}
		}
		for _, name := range []string{"jls", "bm.txt"} {
			if text, _, _, res := call(t, ctx, read, `{"path":"`+name+`"}`); len(res.Content) != 1 || strings.HasPrefix(text, "Read image") {
				t.Errorf("%s read as image: %q", name, text)
			}
		}
		for name, want := range map[string]string{
			"broken.bmp": "Read image file [image/bmp]\n[Image omitted: could not be converted to a supported inline image format.]",
			"broken.gif": "Read image file [image/gif]\n[Image omitted: could not be resized below the inline image size limit.]",
		} {
			if text, _, _, res := call(t, ctx, read, `{"path":"`+name+`"}`); len(res.Content) != 1 || text != want {
				t.Errorf("%s: %q", name, text)
			}
		}
	})
}

// Images over 2000×2000 are scaled to fit, as pi does, with its note.
func TestReadImageResize(t *testing.T) {
	m := memfs.New()
	img := image.NewRGBA(image.Rect(0, 0, 4001, 10))
	for x := 0; x < 4001; x += 7 {
		img.Set(x, x%10, color.RGBA{uint8(x), 0, 255, 255})
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	m.AddFile("/work/wide.png", buf.Bytes(), 0o644)
	// A BMP over the limit: converted, then resized; both hints.
	var bmpBuf bytes.Buffer
	bmp.Encode(&bmpBuf, image.NewRGBA(image.Rect(0, 0, 20, 2100)))
	m.AddFile("/work/tall.bmp", bmpBuf.Bytes(), 0o644)
	read := NewRead(m, m.Info())

	text, _, _, res := call(t, context.Background(), read, `{"path":"wide.png"}`)
	if text != "Read image file [image/png]\n[Image: original 4001x10, displayed at 2000x5. Multiply coordinates by 2.00 to map to original image.]" {
		t.Errorf("wide: %q", text)
	}
	raw, _ := base64.StdEncoding.DecodeString(res.Content[1].Data)
	if got, err := png.Decode(bytes.NewReader(raw)); err != nil || got.Bounds().Dx() != 2000 || got.Bounds().Dy() != 5 {
		t.Errorf("wide: resized image %v %v", err, got)
	}
	text, _, _, _ = call(t, context.Background(), read, `{"path":"tall.bmp"}`)
	if text != "Read image file [image/png]\n[Image converted from image/bmp to image/png.]\n[Image: original 20x2100, displayed at 19x2000. Multiply coordinates by 1.05 to map to original image.]" {
		t.Errorf("tall: %q", text)
	}
}

func TestTargetDimensions(t *testing.T) {
	for _, c := range [][4]int{{4000, 3000, 2000, 1500}, {3000, 4000, 1500, 2000}, {2001, 2001, 2000, 2000}, {1000, 3000, 667, 2000}, {5000, 10, 2000, 4}, {2000, 1999, 2000, 1999}} {
		if w, h := targetDimensions(c[0], c[1]); w != c[2] || h != c[3] {
			t.Errorf("targetDimensions(%d,%d) = %d,%d want %d,%d", c[0], c[1], w, h, c[2], c[3])
		}
	}
}

func TestReadStructuredContent(t *testing.T) {
	m := memfs.New()
	m.AddFile("/work/a.txt", []byte("a\nb\nc"), 0o644)
	var gifBuf bytes.Buffer
	gif.Encode(&gifBuf, image.NewRGBA(image.Rect(0, 0, 2, 2)), nil)
	m.AddFile("/work/g.gif", gifBuf.Bytes(), 0o644)
	read := NewRead(m, m.Info())
	_, _, _, res := call(t, context.Background(), read, `{"path":"a.txt","limit":1}`)
	if res.StructuredContent != "a\n\n[2 more lines in file. Use offset=2 to continue.]" {
		t.Errorf("text: %#v", res.StructuredContent)
	}
	_, _, _, res = call(t, context.Background(), read, `{"path":"g.gif"}`)
	sc, _ := res.StructuredContent.(map[string]any)
	if sc["type"] != "image" || sc["mimeType"] != "image/gif" || sc["note"] != "Read image file [image/gif]" || sc["data"] != res.Content[1].Data {
		t.Errorf("image: %#v", res.StructuredContent)
	}
}

// An image within 2000×2000 whose base64 form exceeds 4.5 MiB is
// re-encoded: noise does not fit as PNG, so JPEG wins, and pi's note is
// printed although the size did not change.
func TestReadImageByteLimit(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("slow image encoding; covered without -race/-short")
	}
	img := image.NewRGBA(image.Rect(0, 0, 1300, 1300))
	r := rand.New(rand.NewPCG(7, 7))
	for i := range img.Pix {
		img.Pix[i] = byte(r.Uint32())
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	m := memfs.New()
	m.AddFile("/work/noise.png", buf.Bytes(), 0o644)
	text, _, _, res := call(t, context.Background(), NewRead(m, m.Info()), `{"path":"noise.png"}`)
	if text != "Read image file [image/jpeg]\n[Image: original 1300x1300, displayed at 1300x1300. Multiply coordinates by 1.00 to map to original image.]" ||
		len(res.Content) != 2 || res.Content[1].MimeType != "image/jpeg" || len(res.Content[1].Data) >= imageMaxBytes {
		t.Errorf("noise: %q", text)
	}
}
