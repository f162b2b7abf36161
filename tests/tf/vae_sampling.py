"""The Keras VAE example's shape, twice: a Sampling layer that draws its
noise for the batch, a Model subclass whose own train_step computes
reconstruction and KL losses and keeps them in Mean trackers, fit on NumPy
images. First with tf.keras.backend.random_normal and a dense encoder, then
as keras-io's Keras 3 version writes it: keras.random.normal with a
SeedGenerator of the layer's, ops.shape, and a convolutional encoder and
decoder. Under MATEX_ENABLE=1 each rank must draw the noise of its own rows
of the global batch, and the trackers must give the global values.
matex.verify compares the plain run with N ranks."""
import numpy as np
import tensorflow as tf
import keras

latent = 2
rng = np.random.default_rng(21)
images = rng.uniform(size=(192, 8, 8, 1)).astype("float32")


class Sampling(keras.layers.Layer):
    def call(self, inputs):
        z_mean, z_log_var = inputs
        batch, dim = tf.shape(z_mean)[0], tf.shape(z_mean)[1]
        epsilon = tf.keras.backend.random_normal(shape=(batch, dim))
        return z_mean + tf.exp(0.5 * z_log_var) * epsilon


class SeededSampling(keras.layers.Layer):
    """keras-io's Keras 3 VAE: the layer's own SeedGenerator."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = keras.random.SeedGenerator(1337)

    def call(self, inputs):
        z_mean, z_log_var = inputs
        batch = keras.ops.shape(z_mean)[0]
        dim = keras.ops.shape(z_mean)[1]
        epsilon = keras.random.normal(shape=(batch, dim), seed=self.seed_generator)
        return z_mean + keras.ops.exp(0.5 * z_log_var) * epsilon


def dense_vae():
    encoder_inputs = keras.Input(shape=(8, 8, 1))
    h = keras.layers.Flatten()(encoder_inputs)
    h = keras.layers.Dense(16, activation="relu")(h)
    z_mean = keras.layers.Dense(latent)(h)
    z_log_var = keras.layers.Dense(latent)(h)
    encoder = keras.Model(encoder_inputs, [z_mean, z_log_var, Sampling()([z_mean, z_log_var])])
    decoder_inputs = keras.Input(shape=(latent,))
    d = keras.layers.Dense(64, activation="sigmoid")(decoder_inputs)
    return encoder, keras.Model(decoder_inputs, keras.layers.Reshape((8, 8, 1))(d))


def conv_vae():
    encoder_inputs = keras.Input(shape=(8, 8, 1))
    h = keras.layers.Conv2D(8, 3, activation="relu", strides=2, padding="same")(encoder_inputs)
    h = keras.layers.Flatten()(h)
    h = keras.layers.Dense(16, activation="relu")(h)
    z_mean = keras.layers.Dense(latent, name="z_mean")(h)
    z_log_var = keras.layers.Dense(latent, name="z_log_var")(h)
    encoder = keras.Model(encoder_inputs, [z_mean, z_log_var, SeededSampling()([z_mean, z_log_var])])
    decoder_inputs = keras.Input(shape=(latent,))
    d = keras.layers.Dense(4 * 4 * 8, activation="relu")(decoder_inputs)
    d = keras.layers.Reshape((4, 4, 8))(d)
    d = keras.layers.Conv2DTranspose(8, 3, activation="relu", strides=2, padding="same")(d)
    return encoder, keras.Model(decoder_inputs, keras.layers.Conv2DTranspose(1, 3, activation="sigmoid",
                                                                             padding="same")(d))


class VAE(keras.Model):
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder
        self.total_loss_tracker = keras.metrics.Mean(name="total_loss")
        self.reconstruction_loss_tracker = keras.metrics.Mean(name="reconstruction_loss")
        self.kl_loss_tracker = keras.metrics.Mean(name="kl_loss")

    @property
    def metrics(self):
        return [self.total_loss_tracker, self.reconstruction_loss_tracker, self.kl_loss_tracker]

    def train_step(self, data):
        with tf.GradientTape() as tape:
            z_mean, z_log_var, z = self.encoder(data)
            reconstruction = self.decoder(z)
            reconstruction_loss = tf.reduce_mean(tf.reduce_sum(
                keras.losses.binary_crossentropy(data, reconstruction), axis=(1, 2)))
            kl_loss = -0.5 * (1 + z_log_var - tf.square(z_mean) - tf.exp(z_log_var))
            kl_loss = tf.reduce_mean(tf.reduce_sum(kl_loss, axis=1))
            total_loss = reconstruction_loss + kl_loss
        grads = tape.gradient(total_loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
        self.total_loss_tracker.update_state(total_loss)
        self.reconstruction_loss_tracker.update_state(reconstruction_loss)
        self.kl_loss_tracker.update_state(kl_loss)
        return {m.name: m.result() for m in self.metrics}


for seed, build in ((4, dense_vae), (5, conv_vae)):
    keras.utils.set_random_seed(seed)
    encoder, decoder = build()
    vae = VAE(encoder, decoder)
    vae.compile(optimizer=keras.optimizers.Adam(0.01))
    history = vae.fit(images, epochs=3, batch_size=30, verbose=0)  # 7 batches, the last of 12 rows
    print(build.__name__, "kl_loss", history.history["kl_loss"][-1], "encoder output norm",
          float(tf.norm(encoder(images[:16])[0])))
