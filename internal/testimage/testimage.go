// Package testimage makes the pictures tests show the bot: real files of
// each kind a model takes, small enough to write into a fake's answer.
package testimage

import (
	"bytes"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
)

// PNG is a w×h PNG of one colour.
func PNG(w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		for y := range h {
			img.Set(x, y, color.RGBA{R: 200, G: 40, B: 40, A: 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		// Encoding an in-memory RGBA image cannot fail.
		panic(err)
	}
	return b.Bytes()
}

// JPEG is a w×h JPEG of one colour.
func JPEG(w, h int) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewGray(image.Rect(0, 0, w, h)), nil); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// GIF is a w×h GIF.
func GIF(w, h int) []byte {
	var b bytes.Buffer
	img := image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.Black, color.White})
	if err := gif.Encode(&b, img, nil); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// WebP is the header of a lossless w×h WebP (1 ≤ w, h ≤ 16384): what a
// reader of its size needs; no Go encoder writes the format.
func WebP(w, h int) []byte {
	bits := uint32(w-1) | uint32(h-1)<<14
	chunk := []byte{0x2f, byte(bits), byte(bits >> 8), byte(bits >> 16), byte(bits >> 24)}
	le := func(n int) []byte { return []byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24)} }
	body := append([]byte("WEBPVP8L"), le(len(chunk))...)
	body = append(append(body, chunk...), 0) // a chunk of odd length is padded
	return append(append([]byte("RIFF"), le(len(body))...), body...)
}
