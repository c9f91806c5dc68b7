"""Places as people name them in questions, and the names data holds for them: a demonym ("Canadian customers"), a
common short name ("the UK", "the States") or a region's adjective ("European"). Each word maps to the spellings a
country or region dimension may hold (its English name, its ISO 3166 alpha-2 code); the analyst looks every spelling
up in the data like any other word, so a place binds only to a value the data has, and only in a field whose name
says it holds places (country, region, territory...): "CA" in a field of US states is not Canada.
"""

from __future__ import annotations

# demonym or short name -> (English name, ISO 3166-1 alpha-2 code)
_COUNTRIES: dict[str, tuple[str, str]] = {
    "american": ("United States", "US"),
    "usa": ("United States", "US"),
    "u.s.": ("United States", "US"),
    "america": ("United States", "US"),  # a region of that name the data holds is matched as written first
    "argentine": ("Argentina", "AR"),
    "argentinian": ("Argentina", "AR"),
    "australian": ("Australia", "AU"),
    "austrian": ("Austria", "AT"),
    "belgian": ("Belgium", "BE"),
    "brazilian": ("Brazil", "BR"),
    "british": ("United Kingdom", "GB"),
    "uk": ("United Kingdom", "GB"),
    "britain": ("United Kingdom", "GB"),
    "canadian": ("Canada", "CA"),
    "chilean": ("Chile", "CL"),
    "chinese": ("China", "CN"),
    "colombian": ("Colombia", "CO"),
    "czech": ("Czechia", "CZ"),
    "danish": ("Denmark", "DK"),
    "dutch": ("Netherlands", "NL"),
    "holland": ("Netherlands", "NL"),
    "egyptian": ("Egypt", "EG"),
    "finnish": ("Finland", "FI"),
    "french": ("France", "FR"),
    "german": ("Germany", "DE"),
    "greek": ("Greece", "GR"),
    "hungarian": ("Hungary", "HU"),
    "indian": ("India", "IN"),
    "indonesian": ("Indonesia", "ID"),
    "irish": ("Ireland", "IE"),
    "israeli": ("Israel", "IL"),
    "italian": ("Italy", "IT"),
    "japanese": ("Japan", "JP"),
    "kenyan": ("Kenya", "KE"),
    "korean": ("South Korea", "KR"),
    "malaysian": ("Malaysia", "MY"),
    "mexican": ("Mexico", "MX"),
    "moroccan": ("Morocco", "MA"),
    "nigerian": ("Nigeria", "NG"),
    "norwegian": ("Norway", "NO"),
    "pakistani": ("Pakistan", "PK"),
    "peruvian": ("Peru", "PE"),
    "filipino": ("Philippines", "PH"),
    "polish": ("Poland", "PL"),
    "portuguese": ("Portugal", "PT"),
    "romanian": ("Romania", "RO"),
    "russian": ("Russia", "RU"),
    "saudi": ("Saudi Arabia", "SA"),
    "singaporean": ("Singapore", "SG"),
    "spanish": ("Spain", "ES"),
    "swedish": ("Sweden", "SE"),
    "swiss": ("Switzerland", "CH"),
    "thai": ("Thailand", "TH"),
    "turkish": ("Turkey", "TR"),
    "ukrainian": ("Ukraine", "UA"),
    "emirati": ("United Arab Emirates", "AE"),
    "uae": ("United Arab Emirates", "AE"),
    "vietnamese": ("Vietnam", "VN"),
    "kiwi": ("New Zealand", "NZ"),
    "zealander": ("New Zealand", "NZ"),
    "south african": ("South Africa", "ZA"),
}
# a region's adjective -> the region's names
_REGIONS: dict[str, tuple[str, ...]] = {
    "european": ("Europe",),
    "asian": ("Asia",),
    "african": ("Africa",),
    "latin american": ("Latin America", "LATAM"),
    "nordic": ("Nordics",),
    "middle eastern": ("Middle East",),
}


# Words naming a field that holds places: only such a field is matched with a place's other spellings.
PLACE_FIELD_WORDS = frozenset(
    {"country", "nation", "region", "geo", "territory", "location", "market", "continent", "area", "hq", "headquarter"}
)


def place_names(word: str) -> tuple[str, ...]:
    """The spellings the data may hold for the place ``word`` names (lowercase); () when it names none."""
    lower = word.lower()
    country = _COUNTRIES.get(lower, ())
    return (*country, *_REGIONS.get(lower, ()))


__all__ = ["PLACE_FIELD_WORDS", "place_names"]
