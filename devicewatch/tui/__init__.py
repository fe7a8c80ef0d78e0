"""The Textual dashboard. The only part of devicewatch that imports Textual."""
