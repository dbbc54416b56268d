"""Text templates shipped with memwiki (job instructions, instruction blocks, skeletons)."""
