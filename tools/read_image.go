package tools

import (
	"context"
	"encoding/base64"
	"image"
	"io"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/loop"
)

const (
	imageNotConverted = "[Image omitted: could not be converted to a supported inline image format.]"
	imageTooLarge     = "[Image omitted: could not be resized below the inline image size limit.]"
)

// readImage returns pi's image result: a text block "Read image file
// [<mime>]" with hint lines, and the image itself, base64. BMP is converted
// to PNG, then the image is auto-resized as pi does (resizeImage). When
// that fails the result is one text block with the original MIME type and
// the reason.
func (t *readTool) readImage(ctx context.Context, r io.Reader, mime, abs string) (*loop.Result, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, readErr(err, abs)
	}
	if err := checkAbort(ctx); err != nil {
		return nil, err
	}
	omitted := func(reason string) (*loop.Result, error) {
		res := loop.TextResult("Read image file ["+mime+"]\n"+reason, nil)
		res.StructuredContent = res.Content[0].Text
		return res, nil
	}
	var hints []string
	cur, curMime := data, mime
	var decoded image.Image
	if mime == "image/bmp" {
		png, img, err := convertBMP(data)
		if err != nil {
			return omitted(imageNotConverted)
		}
		cur, curMime, decoded = png, "image/png", img
		hints = append(hints, "[Image converted from image/bmp to image/png.]")
	}
	rs, ok := resizeImage(cur, curMime, decoded)
	if !ok {
		return omitted(imageTooLarge)
	}
	if note := dimensionNote(rs); note != "" {
		hints = append(hints, note)
	}
	text := "Read image file [" + rs.mime + "]"
	if len(hints) > 0 {
		text += "\n" + strings.Join(hints, "\n")
	}
	b64 := base64.StdEncoding.EncodeToString(rs.data)
	return &loop.Result{
		Content: []loop.Content{loop.Text(text), loop.Image(b64, rs.mime)},
		// pi 1.6's machine result for images; the note is the text block.
		StructuredContent: map[string]any{"type": "image", "data": b64, "mimeType": rs.mime, "note": text},
	}, nil
}
