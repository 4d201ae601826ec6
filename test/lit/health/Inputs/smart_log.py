"""Writes an NVMe SMART / health log page (512 bytes, log identifier 02h) as a recorded tree holds
it in dev/nvmeN. Usage: smart_log.py OUT CRITICAL_WARNING AVAILABLE_SPARE SPARE_THRESHOLD MEDIA_ERRORS"""
import sys

out, warning, spare, threshold, media = sys.argv[1], *map(int, sys.argv[2:6])
page = bytearray(512)
page[0] = warning
page[3] = spare
page[4] = threshold
page[160:176] = media.to_bytes(16, "little")
open(out, "wb").write(page)
