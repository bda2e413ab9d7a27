package tools

import (
	"context"
	"encoding/base64"
	"io"

	"github.com/pi-sandbox/pi-sandbox/loop"
)

// readImage returns pi's image result: a text block naming the MIME type
// and the image itself, base64. BMP is converted to PNG (convertBMP).
func (t *readTool) readImage(ctx context.Context, r io.Reader, mime, abs string) (*loop.Result, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, readErr(err, abs)
	}
	if err := checkAbort(ctx); err != nil {
		return nil, err
	}
	text := "Read image file [" + mime + "]"
	if mime == "image/bmp" {
		png, err := convertBMP(data)
		if err != nil {
			res := loop.TextResult(text+"\n[Image omitted: could not be converted to a supported inline image format.]", nil)
			res.StructuredContent = res.Content[0].Text
			return res, nil
		}
		data, mime = png, "image/png"
		text = "Read image file [image/png]\n[Image converted from image/bmp to image/png.]"
	}
	b64 := base64.StdEncoding.EncodeToString(data)
	return &loop.Result{
		Content: []loop.Content{loop.Text(text), loop.Image(b64, mime)},
		// pi 1.6's machine result for images; the note is the text block.
		StructuredContent: map[string]any{"type": "image", "data": b64, "mimeType": mime, "note": text},
	}, nil
}
