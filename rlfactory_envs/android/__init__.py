"""The Android family: phone control with AndroidWorld's actions on simulated phones (``rlf/Android-v0``)."""
