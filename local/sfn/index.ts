import './polyfill';

export * from './dispatcher';
export * from './runner';
export * from './server';
