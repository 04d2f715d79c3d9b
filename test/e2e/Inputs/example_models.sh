# example_models.sh, sourced with $examples set: `models` becomes every example
# model under it, the Hugging Face folders (those with a config.json) first,
# then the native specs. Shared by cuda_examples_all.sh and
# cuda_codegen_per_arch.sh.
models=()
for d in "$examples"/models/*/; do [ -f "$d/config.json" ] && models+=("${d%/}"); done
models+=("$examples"/models/specs/*.json)
