"""Bundled FEVER-style demo claims: written for this project, about invented things.

24 claims, 12 SUPPORTS and 12 REFUTES, each with one evidence page of three or four
sentences of which one is the evidence. Each claim's knowledge base is built exactly
as an imported FEVER claim's (`core.fever.claim_questions`): its evidence page plus 8
pages of other claims, drawn and shuffled by the claim id.
"""

from __future__ import annotations

from core.data import Question
from core.fever import Claim, claim_questions

DEMO_FEVER_DATASET = "demo-fever"

# (claim, label, page title, page sentences, index of the evidence sentence)
_CLAIMS: tuple[tuple[str, str, str, tuple[str, ...], int], ...] = (
    ("The Varnholt Bridge crosses the Ellow River.", "SUPPORTS", "Varnholt Bridge", (
        "The Varnholt Bridge is a stone arch bridge in the province of Drelland.",
        "It crosses the Ellow River a short way above the town of Marrowby.",
        "The bridge was widened in 1911 to carry a tramway.",
    ), 1),
    ("Osric Tellaway was born in a coastal village.", "REFUTES", "Osric Tellaway", (
        "Osric Tellaway (1862 - 1931) was a surveyor and mapmaker.",
        "He was born in Kessfold, a mountain hamlet far from the sea.",
        "His maps of the northern passes were used for half a century.",
    ), 1),
    ("The Quillmere Choir sings without instruments.", "SUPPORTS", "Quillmere Choir", (
        "The Quillmere Choir is an amateur choir founded in 1948.",
        "It performs only unaccompanied music, with no instruments at all.",
        "The choir tours the river towns every second summer.",
        "Its longest-serving conductor was Hanne Brisk.",
    ), 1),
    ("Dunmarrow Lamps was founded in the twentieth century.", "REFUTES", "Dunmarrow Lamps", (
        "Dunmarrow Lamps is a maker of oil and gas lamps.",
        "The firm was founded in 1874 by the brothers Aldo and Pim Dunmarrow.",
        "Its works stood beside the old canal basin until 1960.",
    ), 1),
    ("Lake Sorrowin is a freshwater lake.", "SUPPORTS", "Lake Sorrowin", (
        "Lake Sorrowin lies in a glacial valley below the Tarn Heights.",
        "Its water is fresh and is fed by four mountain streams.",
        "The lake freezes over in most winters.",
    ), 1),
    ("The Brasswick Observatory has never had a telescope.", "REFUTES",
     "Brasswick Observatory", (
         "The Brasswick Observatory stands on a ridge east of Brasswick.",
         "Its main instrument is a refracting telescope installed in 1890.",
         "The observatory is now run by a volunteer society.",
     ), 1),
    ("Perrin Hollis wrote a book about river trade.", "SUPPORTS", "Perrin Hollis", (
        "Perrin Hollis was a historian of the inland waterways.",
        "His best-known book is a history of river trade on the Ellow.",
        "He taught for thirty years at the college in Marrowby.",
    ), 1),
    ("The Greywater Ferry runs only in winter.", "REFUTES", "Greywater Ferry", (
        "The Greywater Ferry carries passengers across the Greywater estuary.",
        "The ferry runs from April to October and is laid up over the winter.",
        "Its current boat was built in 1987.",
    ), 1),
    ("Tessaly Market is held on Saturdays.", "SUPPORTS", "Tessaly Market", (
        "Tessaly Market is a street market in the old quarter of Tessaly.",
        "It is held every Saturday from dawn until early afternoon.",
        "Traders sell cheese, wool, pottery and secondhand books.",
    ), 1),
    ("The Orrin Trio is a jazz group.", "REFUTES", "Orrin Trio", (
        "The Orrin Trio was formed in 1972 by three students of the Kessfold conservatory.",
        "It plays baroque chamber music on period instruments.",
        "The trio has recorded eleven albums.",
    ), 1),
    ("Mount Kelder is the highest peak of the Tarn Heights.", "SUPPORTS", "Mount Kelder", (
        "Mount Kelder is a mountain in the north of Drelland.",
        "At 2,140 metres it is the highest peak of the Tarn Heights.",
        "The first recorded ascent was made in 1820.",
    ), 1),
    ("Halde Verrin was a painter.", "REFUTES", "Halde Verrin", (
        "Halde Verrin (1901 - 1977) was born in Marrowby and studied in Tessaly.",
        "She worked as a civil engineer and never painted.",
        "A dam on the upper Ellow is named after her.",
    ), 1),
    ("The Stellan Line is a railway.", "SUPPORTS", "Stellan Line", (
        "The Stellan Line is a narrow-gauge railway in the hill country.",
        "It was opened in 1899 to carry slate from the quarries at Stellan.",
        "Since 1964 it has carried only tourists.",
    ), 0),
    ("Corwen Abbey is still home to monks.", "REFUTES", "Corwen Abbey", (
        "Corwen Abbey was a monastery on the south bank of the Ellow.",
        "The last monks left in 1539 and the abbey has been a ruin ever since.",
        "Its gatehouse is the best-preserved part.",
    ), 1),
    ("Brannoc Sile played the fiddle.", "SUPPORTS", "Brannoc Sile", (
        "Brannoc Sile was a folk musician from the coast of Drelland.",
        "He played the fiddle in dance bands for over forty years.",
        "Several of his tunes are still played at harvest fairs.",
    ), 1),
    ("The Weirholt Canal connects two seas.", "REFUTES", "Weirholt Canal", (
        "The Weirholt Canal is a short canal in the lowlands.",
        "It links the town of Weirholt with the Ellow River and reaches no sea.",
        "Most of its locks are now worked by volunteers.",
    ), 1),
    ("Saffi Marne won a prize for her garden.", "SUPPORTS", "Saffi Marne", (
        "Saffi Marne is a gardener and broadcaster.",
        "Her garden at Loftstead won the national garden prize in 1996.",
        "She presented a weekly radio programme about plants.",
    ), 1),
    ("Kessfold Cheese is made from goat's milk.", "REFUTES", "Kessfold Cheese", (
        "Kessfold Cheese is a hard cheese from the hill farms around Kessfold.",
        "It is made from the milk of sheep, never cows or goats.",
        "Each wheel is aged for at least nine months.",
    ), 1),
    ("The Marrowby Clock Tower is older than the town hall.", "SUPPORTS",
     "Marrowby Clock Tower", (
         "The Marrowby Clock Tower stands in the market square of Marrowby.",
         "It was built in 1702, a century before the town hall beside it.",
         "Its bell is rung by hand on feast days.",
     ), 1),
    ("Liora Fane directed films.", "REFUTES", "Liora Fane", (
        "Liora Fane is a stage actress known for comic roles.",
        "She has never directed a film or a play.",
        "She played in the Tessaly repertory company for twenty seasons.",
    ), 1),
    ("The Drelland Gazette is published every day.", "SUPPORTS", "Drelland Gazette", (
        "The Drelland Gazette is the oldest newspaper of the province.",
        "It has appeared daily since 1851, apart from two weeks during a strike.",
        "Its offices are in Tessaly.",
    ), 1),
    ("Edric Palle invented the steam loom.", "REFUTES", "Edric Palle", (
        "Edric Palle was a weaver and trade unionist.",
        "He did not invent any machine; he campaigned against the steam loom.",
        "A street in Weirholt bears his name.",
    ), 1),
    ("Fellgarth Castle has a moat.", "SUPPORTS", "Fellgarth Castle", (
        "Fellgarth Castle is a medieval castle in the west of Drelland.",
        "It is surrounded by a wide moat fed by the Fell Beck.",
        "The castle was besieged twice in the fourteenth century.",
    ), 1),
    ("The Loftstead Lighthouse is still in use.", "REFUTES", "Loftstead Lighthouse", (
        "The Loftstead Lighthouse stands on the headland above Loftstead harbour.",
        "Its light was switched off in 1972 and it now houses a small museum.",
        "The tower is painted in red and white bands.",
    ), 1),
)


def demo_fever_questions() -> list[Question]:
    """The bundled FEVER-style claims (dataset "demo-fever"), identical on every call.

    Returns:
        24 claims with ids "demo-fever-001"..., alternating SUPPORTS and REFUTES,
        each with 9 pages: its evidence page and 8 pages of other claims.
    """
    claims = [Claim(f"demo-fever-{n:03d}", text, label, ((title, evidence),))
              for n, (text, label, title, _, evidence) in enumerate(_CLAIMS, start=1)]
    pages = {title: sentences for _, _, title, sentences, _ in _CLAIMS}
    return claim_questions(claims, pages, DEMO_FEVER_DATASET)
