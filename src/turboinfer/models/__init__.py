"""Real models and data from installed packages: the zoo, its ONNX export, photos, sentences, preprocessing."""
