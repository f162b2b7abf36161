"""A Keras script that writes files and reads them back, as users write it:
save_weights of the initial model loaded into two twins, fit with
ModelCheckpoint (the best model, and weights every epoch), CSVLogger,
TensorBoard and BackupAndRestore (fit interrupted by an exception, then
resumed), then Model.save, load_model of both saved models, export as a
SavedModel and tf.saved_model.load, each reloaded model evaluated.

Under MATEX_ENABLE=1 every file must be written once, by rank 0, and be
whole when any rank reads it: matex.verify compares the evaluations with the
plain run's and the files each run wrote; the script checks what it reads
(the CSV's rows, one copy of each scalar in the event file)."""
import csv
import glob
import os

import numpy as np
import tensorflow as tf
import keras

rng = np.random.default_rng(11)
x = rng.normal(size=(200, 10)).astype("float32")
y = (x[:, :3].sum(axis=1) > 0).astype("int32")
x_val, y_val = x[:40], y[:40]
x_train, y_train = x[40:], y[40:]


def build():
    model = keras.Sequential([keras.Input(shape=(10,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dropout(0.2), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.Adam(0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return model


keras.utils.set_random_seed(5)
model = build()
model.save_weights("initial.weights.h5")
twins = [build(), build()]
for twin in twins:
    twin.load_weights("initial.weights.h5")
    print("twin loads the initial weights:", twin.evaluate(x_val, y_val, verbose=0))


class Interrupt(keras.callbacks.Callback):
    """The Keras guide's way to show BackupAndRestore: fit fails at epoch 2."""

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == 2:
            raise RuntimeError("interrupted on purpose")


callbacks = [keras.callbacks.ModelCheckpoint("best.keras", monitor="val_loss", save_best_only=True, verbose=1),
             keras.callbacks.ModelCheckpoint("weights/epoch{epoch:02d}.weights.h5", save_weights_only=True),
             keras.callbacks.CSVLogger("log.csv", append=True),
             keras.callbacks.TensorBoard("tb_logs"),
             keras.callbacks.BackupAndRestore("backup")]
try:
    model.fit(x_train, y_train, validation_data=(x_val, y_val), epochs=4, batch_size=32, verbose=2,
              callbacks=callbacks + [Interrupt()])
except RuntimeError as error:
    print("fit stopped:", error)
history = model.fit(x_train, y_train, validation_data=(x_val, y_val), epochs=4, batch_size=32, verbose=2,
                    callbacks=callbacks)
print("resumed for", len(history.history["loss"]), "epochs")
assert len(history.history["loss"]) == 2, "BackupAndRestore should resume at epoch 2"
assert not os.path.exists("backup"), "BackupAndRestore removes its backup once fit completes"

model.save("final.keras")
for name in ("best.keras", "final.keras"):
    loaded = keras.models.load_model(name)
    print(name, "evaluates to", loaded.evaluate(x_val, y_val, verbose=0))
saved = sorted(glob.glob("weights/epoch*.weights.h5"))
assert len(saved) == 4, saved
last = build()
last.load_weights(saved[-1])
print("last epoch's weights:", last.evaluate(x_val, y_val, verbose=0))

model.export("exported")
reloaded = tf.saved_model.load("exported")
served = reloaded.serve(x_val)
served_loss = keras.metrics.Mean(name="served_loss")
served_loss.update_state(keras.losses.sparse_categorical_crossentropy(y_val, served, from_logits=True))
print("the exported model's loss:", float(served_loss.result()))

with open("log.csv") as lines:
    rows = list(csv.DictReader(lines))
assert [int(r["epoch"]) for r in rows] == [0, 1, 2, 3], rows
print("log.csv: epochs", [r["epoch"] for r in rows], "last loss", rows[-1]["loss"])

seen = {}
for path in glob.glob("tb_logs/**/events.out.tfevents.*", recursive=True):
    for event in tf.compat.v1.train.summary_iterator(path):
        for value in event.summary.value:
            if value.tag.startswith("epoch_"):
                key = (os.path.dirname(path), value.tag, event.step)
                seen[key] = seen.get(key, 0) + 1
copies = sorted(set(seen.values()))
assert seen and copies == [1], f"each epoch scalar once in the event files: {copies}"
print("event files:", len(seen), "epoch scalars, each once")
