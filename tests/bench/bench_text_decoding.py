"""Text in legacy encodings: how many samples Fathom decodes exactly, beside
charset-normalizer's own first choice, in one run.

Each sample is a sentence or two of contract-like text in one language, written in one
legacy encoding (short ones included: they are where code pages tie).

    .venv/bin/python tests/bench/bench_text_decoding.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from charset_normalizer import from_bytes

from app.ingest.convert.text_files import decode_text, preferred_legacy_encodings

SAMPLES: dict[str, tuple[str, str]] = {
    "French": (
        "Le café du père Noël coûte 3 €.\nRésumé des clauses: l'indemnité est due.\n",
        "cp1252",
    ),
    "French, Latin-1": (
        "Le café du père Noël coûte cher. Résumé des clauses: l'indemnité est due à la livraison.\n",
        "latin-1",
    ),
    "French, short": ("Café crème.\n", "cp1252"),
    "German": ("Die Größe der Übergabe wird später geprüft. Schöne Grüße aus München.\n", "cp1252"),
    "German, short": ("Größe: 3 m²\n", "cp1252"),
    "Spanish": ("El niño comió piña en el año pasado. ¿Dónde está la cláusula?\n", "cp1252"),
    "Swedish": (
        "Avtalet träder i kraft när båda parter har undertecknat det. Följande gäller.\n",
        "cp1252",
    ),
    "Portuguese": (
        "O contrato entra em vigor na data da assinatura. Não há exceções à cláusula.\n",
        "cp1252",
    ),
    "Czech": ("Příliš žluťoučký kůň úpěl ďábelské ódy. Smlouva je platná od března.\n", "cp1250"),
    "Polish": (
        "Zażółć gęślą jaźń. Umowa wchodzi w życie z dniem podpisania przez obie strony.\n",
        "cp1250",
    ),
    "Russian": ("Договор вступает в силу с момента подписания обеими сторонами.\n", "cp1251"),
    "Russian, KOI8-R": (
        "Договор вступает в силу с момента подписания обеими сторонами.\n",
        "koi8_r",
    ),
    "Greek": ("Η σύμβαση τίθεται σε ισχύ από την υπογραφή της.\n", "cp1253"),
    "Turkish": ("Sözleşme her iki tarafça imzalandığı tarihte yürürlüğe girer.\n", "cp1254"),
    "Japanese": ("契約は両当事者の署名の日から効力を生じる。\n", "shift_jis"),
    "Chinese": ("合同自双方签字之日起生效。\n", "gbk"),
    "English, UTF-32": ("Contract text.\n", "utf-32"),
}


def first_choice(raw: bytes) -> str | None:
    best = from_bytes(raw).best()
    return None if best is None else str(best)


def main() -> None:
    print(f"preferred legacy code pages here: {', '.join(preferred_legacy_encodings())}")
    print(f"{'sample':18} {'encoding':10} {'charset-normalizer':>19} {'Fathom':>7}")
    theirs = ours = 0
    for name, (text, encoding) in SAMPLES.items():
        raw = text.encode(encoding)
        their_ok = first_choice(raw) == text
        our_ok = decode_text(raw) == text
        theirs += their_ok
        ours += our_ok
        print(
            f"{name:18} {encoding:10} {'exact' if their_ok else 'WRONG':>19} {'exact' if our_ok else 'WRONG':>7}"
        )
    n = len(SAMPLES)
    print(f"exact: charset-normalizer's first choice {theirs} of {n}, Fathom {ours} of {n}")


if __name__ == "__main__":
    main()
