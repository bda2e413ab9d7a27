package tools

import (
	"bytes"
	"encoding/base64"
	"image"
	_ "image/gif" // decoder for image.Decode
	"image/jpeg"
	"image/png"
	"math"
	"strconv"

	// Decoders for image.Decode: the formats read recognises.
	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/webp"

	"golang.org/x/image/draw"
)

// pi's inline image limits (image-resize.ts defaults).
const (
	imageMaxWidth  = 2000
	imageMaxHeight = 2000
	// imageMaxBytes bounds the base64 payload (4.5 MiB, below Anthropic's
	// 5 MB limit).
	imageMaxBytes = 4.5 * 1024 * 1024
)

// imageJPEGQualities are tried in this order after PNG at each size.
var imageJPEGQualities = []int{80, 85, 70, 55, 40}

// resizedImage is pi's ResizedImage.
type resizedImage struct {
	data                      []byte
	mime                      string
	origW, origH, width, high int
	wasResized                bool
}

// resizeImage is pi's resizeImage: an image within 2000×2000 whose base64
// form is under imageMaxBytes is returned as it is; a larger one is scaled
// to fit 2000×2000 and encoded as PNG or JPEG (qualities 80, 85, 70, 55,
// 40), the first candidate under the limit winning, shrinking by 0.75 per
// round down to 1×1. ok is false when the image cannot be decoded or made
// small enough. img, when not nil, is data already decoded.
//
// Differences from pi (photon): scaling is Catmull-Rom rather than
// Lanczos3 and EXIF orientation is not applied, so the bytes differ; the
// sizes, MIME types and notes follow pi's rules.
func resizeImage(data []byte, mime string, img image.Image) (resizedImage, bool) {
	if img == nil {
		var err error
		if img, _, err = image.Decode(bytes.NewReader(data)); err != nil {
			return resizedImage{}, false
		}
	}
	b := img.Bounds()
	ow, oh := b.Dx(), b.Dy()
	if ow <= imageMaxWidth && oh <= imageMaxHeight && base64.StdEncoding.EncodedLen(len(data)) < imageMaxBytes {
		return resizedImage{data: data, mime: mime, origW: ow, origH: oh, width: ow, high: oh}, true
	}
	tw, th := targetDimensions(ow, oh)
	for w, h := tw, th; ; {
		if out, outMime, ok := firstFitting(img, w, h); ok {
			// pi reports the first target size even when it had to shrink
			// further.
			return resizedImage{data: out, mime: outMime, origW: ow, origH: oh, width: tw, high: th, wasResized: true}, true
		}
		if w == 1 && h == 1 {
			return resizedImage{}, false
		}
		nw, nh := shrink(w), shrink(h)
		if nw == w && nh == h {
			return resizedImage{}, false
		}
		w, h = nw, nh
	}
}

func shrink(n int) int {
	if n == 1 {
		return 1
	}
	return max(1, int(math.Floor(float64(n)*0.75)))
}

// targetDimensions fits w×h into the maximum, width first, rounding as
// JavaScript's Math.round does.
func targetDimensions(w, h int) (int, int) {
	if w > imageMaxWidth {
		h = int(math.Floor(float64(h)*imageMaxWidth/float64(w) + 0.5))
		w = imageMaxWidth
	}
	if h > imageMaxHeight {
		w = int(math.Floor(float64(w)*imageMaxHeight/float64(h) + 0.5))
		h = imageMaxHeight
	}
	return w, h
}

// firstFitting scales img to w×h and returns the first encoding, in pi's
// order, whose base64 form is under the limit.
func firstFitting(img image.Image, w, h int) ([]byte, string, bool) {
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.CatmullRom.Scale(dst, dst.Bounds(), img, img.Bounds(), draw.Src, nil)
	fits := func(b []byte) bool { return base64.StdEncoding.EncodedLen(len(b)) < imageMaxBytes }
	var buf bytes.Buffer
	if png.Encode(&buf, dst) == nil && fits(buf.Bytes()) {
		return buf.Bytes(), "image/png", true
	}
	for _, q := range imageJPEGQualities {
		buf.Reset()
		if jpeg.Encode(&buf, dst, &jpeg.Options{Quality: q}) == nil && fits(buf.Bytes()) {
			return buf.Bytes(), "image/jpeg", true
		}
	}
	return nil, "", false
}

// dimensionNote is pi's formatDimensionNote.
func dimensionNote(r resizedImage) string {
	if !r.wasResized {
		return ""
	}
	scale := float64(r.origW) / float64(r.width)
	return "[Image: original " + strconv.Itoa(r.origW) + "x" + strconv.Itoa(r.origH) + ", displayed at " +
		strconv.Itoa(r.width) + "x" + strconv.Itoa(r.high) + ". Multiply coordinates by " +
		strconv.FormatFloat(scale, 'f', 2, 64) + " to map to original image.]"
}
