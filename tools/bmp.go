package tools

import (
	"bytes"
	"image"
	"image/png"

	"golang.org/x/image/bmp"
)

// convertBMP decodes a BMP and re-encodes it as PNG, as pi does before
// sending it inline. golang.org/x/image/bmp decodes uncompressed 1/4/8/24/32
// bit images; other variants (RLE) fail and read reports the image as
// omitted.
func convertBMP(data []byte) ([]byte, image.Image, error) {
	img, err := bmp.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	var out bytes.Buffer
	if err := png.Encode(&out, img); err != nil {
		return nil, nil, err
	}
	return out.Bytes(), img, nil
}
