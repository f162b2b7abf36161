"""keras-io's DCGAN ("GAN overriding Model.train_step"), on small images:
a train_step of the script's own that draws latent vectors for the batch with
a SeedGenerator, concatenates generated and real images, adds label noise
drawn for the concatenated labels (keras.random.uniform(ops.shape(labels))),
and updates two optimizers, with Mean trackers for both losses. The
discriminator runs in training mode on the concatenated images, so its
Dropout draws a mask for rows that hold both halves.

Under MATEX_ENABLE=1 every rank must draw the numbers one process draws for
its rows, also for the concatenated labels and the Dropout after the
discriminator's layers (each half of the global draw), and both updates
must follow one process's."""
import numpy as np
import tensorflow as tf
import keras
from keras import layers, ops

rng = np.random.default_rng(9)
images = rng.uniform(size=(160, 8, 8, 1)).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices(images).batch(32)
latent_dim = 8
keras.utils.set_random_seed(2)
discriminator = keras.Sequential([keras.Input(shape=(8, 8, 1)), layers.Conv2D(8, 3, strides=2, padding="same"),
    layers.LeakyReLU(negative_slope=0.2), layers.Flatten(), layers.Dropout(0.2), layers.Dense(1, activation="sigmoid")])
generator = keras.Sequential([keras.Input(shape=(latent_dim,)), layers.Dense(4 * 4 * 8), layers.Reshape((4, 4, 8)),
    layers.Conv2DTranspose(8, 4, strides=2, padding="same"), layers.LeakyReLU(negative_slope=0.2),
    layers.Conv2D(1, 3, padding="same", activation="sigmoid")])

class GAN(keras.Model):
    def __init__(self, discriminator, generator, latent_dim):
        super().__init__()
        self.discriminator = discriminator
        self.generator = generator
        self.latent_dim = latent_dim
        self.seed_generator = keras.random.SeedGenerator(1337)
    def compile(self, d_optimizer, g_optimizer, loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.loss_fn = loss_fn
        self.d_loss_metric = keras.metrics.Mean(name="d_loss")
        self.g_loss_metric = keras.metrics.Mean(name="g_loss")
    @property
    def metrics(self):
        return [self.d_loss_metric, self.g_loss_metric]
    def train_step(self, real_images):
        batch_size = ops.shape(real_images)[0]
        random_latent_vectors = keras.random.normal(shape=(batch_size, self.latent_dim), seed=self.seed_generator)
        generated_images = self.generator(random_latent_vectors)
        combined_images = ops.concatenate([generated_images, real_images], axis=0)
        labels = ops.concatenate([ops.ones((batch_size, 1)), ops.zeros((batch_size, 1))], axis=0)
        labels += 0.05 * keras.random.uniform(ops.shape(labels), seed=self.seed_generator)
        with tf.GradientTape() as tape:
            predictions = self.discriminator(combined_images, training=True)
            d_loss = self.loss_fn(labels, predictions)
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights))
        random_latent_vectors = keras.random.normal(shape=(batch_size, self.latent_dim), seed=self.seed_generator)
        misleading_labels = ops.zeros((batch_size, 1))
        with tf.GradientTape() as tape:
            predictions = self.discriminator(self.generator(random_latent_vectors))
            g_loss = self.loss_fn(misleading_labels, predictions)
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights))
        self.d_loss_metric.update_state(d_loss)
        self.g_loss_metric.update_state(g_loss)
        return {"d_loss": self.d_loss_metric.result(), "g_loss": self.g_loss_metric.result()}

gan = GAN(discriminator=discriminator, generator=generator, latent_dim=latent_dim)
gan.compile(d_optimizer=keras.optimizers.Adam(learning_rate=0.0001), g_optimizer=keras.optimizers.Adam(learning_rate=0.0001),
            loss_fn=keras.losses.BinaryCrossentropy())
history = gan.fit(dataset, epochs=2, verbose=2)
print("g_loss after each epoch:", history.history["g_loss"])
