using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;
using Microsoft.Extensions.DependencyInjection;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Creates the <see cref="IDeadLetterHandler{T}"/> services one registration at a time, for a delivery whose
/// all-at-once resolution failed (one handler's constructor, or one of its dependencies, threw): the container offers
/// no way to resolve the others alone, so every handler that can still be created gets the letter.
/// </summary>
/// <remarks>
/// Each registration is created as the container would: a registered instance as it is; a singleton (type or
/// factory) once, from the root provider, kept until the container disposes this service; a scoped or transient
/// handler in the delivery's scope, and disposed after it. A singleton created here is not the container's own
/// instance (the container cannot hand that one out alone); this path serves only while some handler cannot be
/// created.
/// </remarks>
internal sealed class DeadLetterHandlerFallback(IServiceCollection services, IServiceProvider root) : IAsyncDisposable
{
    private readonly Dictionary<Type, ServiceDescriptor[]> _registrations = [];
    private readonly Dictionary<ServiceDescriptor, object> _singletons = new(ReferenceEqualityComparer.Instance);

    private object SyncObj => _registrations;

    /// <summary>Gets the unkeyed registrations of <paramref name="serviceType"/> (closed, or an open generic it closes), in registration order.</summary>
    public IReadOnlyList<ServiceDescriptor> RegistrationsOf(Type serviceType)
    {
        lock (SyncObj)
        {
            if (!_registrations.TryGetValue(serviceType, out var registrations))
            {
                var definition = serviceType.GetGenericTypeDefinition();
                registrations = [.. services.Where(d => !d.IsKeyedService && (d.ServiceType == serviceType || d.ServiceType == definition))];
                _registrations.Add(serviceType, registrations);
            }

            return registrations;
        }
    }

    /// <summary>
    /// Creates (or, for a singleton or an instance, returns) the handler of one registration; sets
    /// <paramref name="owned"/> when the caller owns the handler and disposes it after the delivery.
    /// </summary>
    public object Create(ServiceDescriptor registration, Type serviceType, IServiceProvider scope, out bool owned)
    {
        owned = false;
        if (registration.ImplementationInstance is { } instance)
        {
            return instance;
        }

        if (registration.Lifetime != ServiceLifetime.Singleton)
        {
            owned = true;
            return Activate(registration, serviceType, scope);
        }

        lock (SyncObj)
        {
            if (!_singletons.TryGetValue(registration, out var singleton))
            {
                // Not cached when it throws: the next letter tries again, as the container would.
                singleton = Activate(registration, serviceType, root);
                _singletons.Add(registration, singleton);
            }

            return singleton;
        }
    }

    /// <summary>Disposes a handler created for one delivery.</summary>
    public static async ValueTask DisposeOwnedAsync(object handler)
    {
        if (handler is IAsyncDisposable asyncDisposable)
        {
            await asyncDisposable.DisposeAsync().ConfigureAwait(false);
        }
        else if (handler is IDisposable disposable)
        {
            disposable.Dispose();
        }
    }

    public async ValueTask DisposeAsync()
    {
        object[] singletons;
        lock (SyncObj)
        {
            singletons = [.. _singletons.Values];
            _singletons.Clear();
        }

        foreach (var singleton in singletons)
        {
            await DisposeOwnedAsync(singleton).ConfigureAwait(false);
        }
    }

    private static object Activate(ServiceDescriptor registration, Type serviceType, IServiceProvider provider)
    {
        if (registration.ImplementationFactory is { } factory)
        {
            return factory(provider);
        }

        var implementation = registration.ImplementationType
            ?? throw new InvalidOperationException($"The registration of {serviceType} has no instance, factory or type.");
        return implementation.IsGenericTypeDefinition
            ? ActivateClosed(implementation, serviceType, provider)
            : ActivatorUtilities.CreateInstance(provider, implementation);
    }

    [UnconditionalSuppressMessage("Trimming", "IL2055", Justification = "The container resolves the same open generic registration the same way; this runs only when it could not.")]
    [UnconditionalSuppressMessage("Trimming", "IL2067", Justification = "As above: the closed type's constructors are those the container would call.")]
    [UnconditionalSuppressMessage("AOT", "IL3050", Justification = "Guarded by RuntimeFeature.IsDynamicCodeSupported.")]
    private static object ActivateClosed(Type openImplementation, Type serviceType, IServiceProvider provider)
    {
        if (!RuntimeFeature.IsDynamicCodeSupported)
        {
            throw new NotSupportedException($"The open generic handler {openImplementation} cannot be created on its own without dynamic code.");
        }

        return ActivatorUtilities.CreateInstance(provider, openImplementation.MakeGenericType(serviceType.GetGenericArguments()));
    }
}
