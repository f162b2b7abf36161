"""keras.applications ResNet50 (weights=None, so BatchNormalization trains)
with Keras fit on small synthetic images (32x32): a plain TensorFlow script
(run it with MATEX_ENABLE=1 mpirun -np N python resnet50.py)."""
import numpy as np
import keras

# Synthetic images with something to learn: each class has a pattern, each image is its class's pattern plus noise.
rng = np.random.default_rng(13)
patterns = rng.normal(size=(10,) + (32, 32, 3)).astype("float32")
y = rng.integers(0, 10, size=(192,))
x = patterns[y] + rng.normal(size=(192,) + (32, 32, 3)).astype("float32")

# float64 and a small learning rate: from scratch, this deep BatchNormalization network amplifies
# rounding so much that two one-process float32 runs differing only in TensorFlow's CPU kernels
# (TF_ENABLE_ONEDNN_OPTS=0/1) disagree by 1e-3 after one step, and at larger learning rates even
# float64 differences grow ~30-fold per step (docs/tensorflow.md). So a step-by-step comparison of
# runs means something.
keras.config.set_floatx("float64")
keras.utils.set_random_seed(1)
model = keras.applications.ResNet50(weights=None, input_shape=(32, 32, 3), classes=10)
model.compile(optimizer=keras.optimizers.SGD(1e-6, momentum=0.9), loss="sparse_categorical_crossentropy",
              metrics=["accuracy"])
history = model.fit(x, y, batch_size=16, epochs=1, verbose=2)
print("final loss %.6f" % history.history["loss"][-1])
